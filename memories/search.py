"""Ranked full-text search over one user's entries, on the index made by migration 0002.

SQLite: FTS5 with the trigram tokenizer; the query text is matched as one phrase, which finds it
as a case-insensitive substring of the key or the value, ranked by bm25 (a hit in the key weighs
more than one in the value). PostgreSQL: a word match on to_tsvector('simple', ...) or a substring
match (ILIKE, indexed by pg_trgm), ranked by ts_rank. Either way every entry that the plain
substring scan finds is found, and ties in relevance go to the most recently updated.

Query texts shorter than MIN_INDEXED_LENGTH cannot use a trigram index; the selector scans for those.
"""

from django.db import connection
from django.db.models import QuerySet

from memories.models import MemoryEntry

MIN_INDEXED_LENGTH = 3
FTS_TABLE = "memories_memoryentry_fts"
ENTRY_TABLE = MemoryEntry._meta.db_table
# bm25 weights per FTS column (key, value): a query found in the key ranks above one found in the value.
KEY_WEIGHT, VALUE_WEIGHT = 4.0, 1.0


def fts_phrase(query_text: str) -> str:
    """The query text as one FTS5 phrase: operators and quotes in it are taken literally."""
    return '"' + query_text.replace('"', '""') + '"'


def _like_pattern(query_text: str) -> str:
    escaped = query_text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def ranked(entries: QuerySet[MemoryEntry], query_text: str) -> QuerySet[MemoryEntry]:
    """entries narrowed to those matching query_text (3+ characters), best match first, then newest."""
    if connection.vendor == "postgresql":
        words = "to_tsvector('simple'::regconfig, {table}.key || ' ' || {table}.value)".format(table=ENTRY_TABLE)
        query = "plainto_tsquery('simple'::regconfig, %s)"
        pattern = _like_pattern(query_text)
        return entries.extra(
            select={"relevance": f"ts_rank({words}, {query})"},
            select_params=[query_text],
            where=[f"({words} @@ {query} OR {ENTRY_TABLE}.key ILIKE %s OR {ENTRY_TABLE}.value ILIKE %s)"],
            params=[query_text, pattern, pattern],
            order_by=["-relevance", "-updated", "-id"],
        )
    # SQLite: bm25 is lower for a better match.
    return entries.extra(
        select={"relevance": f"bm25({FTS_TABLE}, {KEY_WEIGHT}, {VALUE_WEIGHT})"},
        tables=[FTS_TABLE],
        where=[f"{FTS_TABLE}.rowid = {ENTRY_TABLE}.id", f"{FTS_TABLE} MATCH %s"],
        params=[fts_phrase(query_text)],
        order_by=["relevance", "-updated", "-id"],
    )
