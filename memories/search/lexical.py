"""Ranked full-text search over one user's entries, on the index made by migration 0002.

SQLite: FTS5 with the trigram tokenizer; the query text is matched as one phrase, which finds it
as a case-insensitive substring of the key or the value, ranked by bm25 (a hit in the key weighs
more than one in the value). PostgreSQL: a word match on to_tsvector('simple', ...) or a substring
match (ILIKE, indexed by pg_trgm), ranked by ts_rank. Either way every entry that the plain
substring scan finds is found, and ties in relevance go to the most recently updated.

Query texts shorter than MIN_INDEXED_LENGTH cannot use a trigram index; the selector scans for those.

On SQLite, a query text that more than RANK_ALL_LIMIT entries of the whole hub hold (a common word)
is not ranked: scoring every match costs a pass over all of them (0.4 s for a word in one entry
in eight of 1,000,000), and among that many matches relevance barely tells them apart. Those
matches come newest first, found by walking the user's entries from the newest, which stops as
soon as a page is full. A probe of the index, bounded by RANK_ALL_LIMIT, decides which way to go.

The probe counts matches in the whole hub, so whether a text is held by more than RANK_ALL_LIMIT
entries of all accounts together decides the order a caller sees; never any entry, count or
account, only that aggregate, which the time of any query on a shared index gives away as well.
Deciding from the user's own newest entries instead was tried: a common word absent from the
user's latest writes then fell to ranking every match in the hub, 1.4 s at 1,000,000 entries.
A per-account index would remove both.
"""

from django.db import connection
from django.db.models import Q, QuerySet

from memories.models import MemoryEntry

MIN_INDEXED_LENGTH = 3
RANK_ALL_LIMIT = 2000
FTS_TABLE = "memories_memoryentry_fts"
ENTRY_TABLE = MemoryEntry._meta.db_table
# bm25 weights per FTS column (key, value): a query found in the key ranks above one found in the value.
KEY_WEIGHT, VALUE_WEIGHT = 4.0, 1.0


def fts_phrase(query_text: str) -> str:
    """The query text as one FTS5 phrase: operators and quotes in it are taken literally."""
    return '"' + query_text.replace('"', '""') + '"'


def is_common(query_text: str) -> bool:
    """Whether more than RANK_ALL_LIMIT entries in the hub hold query_text (SQLite; reads at most that many)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*) FROM (SELECT rowid FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s LIMIT %s)",
            [fts_phrase(query_text), RANK_ALL_LIMIT + 1],
        )
        (matches,) = cursor.fetchone()
    return matches > RANK_ALL_LIMIT


def _like_pattern(query_text: str) -> str:
    escaped = query_text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def ranked(*, owner_id: int, uid: str, kind: str | None, query_text: str) -> QuerySet[MemoryEntry]:
    """One user's entries matching query_text (3+ characters), best match first, then newest."""
    if connection.vendor == "postgresql":
        entries = MemoryEntry.objects.filter(owner_id=owner_id, uid=uid)
        if kind:
            entries = entries.filter(kind=kind)
        # The same expression as the GIN index of migration 0002, so the planner can use it.
        words = (
            f"(setweight(to_tsvector('simple'::regconfig, {ENTRY_TABLE}.key), 'A') || "
            f"setweight(to_tsvector('simple'::regconfig, {ENTRY_TABLE}.value), 'D'))"
        )
        query = "plainto_tsquery('simple'::regconfig, %s)"
        pattern = _like_pattern(query_text)
        return entries.extra(
            select={"relevance": f"ts_rank({words}, {query})"},
            select_params=[query_text],
            where=[f"({words} @@ {query} OR {ENTRY_TABLE}.key ILIKE %s OR {ENTRY_TABLE}.value ILIKE %s)"],
            params=[query_text, pattern, pattern],
            order_by=["-relevance", "-updated", "-id"],
        )
    if is_common(query_text):
        entries = MemoryEntry.objects.filter(owner_id=owner_id, uid=uid)
        if kind:
            entries = entries.filter(kind=kind)
        return entries.filter(Q(key__icontains=query_text) | Q(value__icontains=query_text)).order_by("-updated", "-id")
    # SQLite: the index must drive the join (matching rows, then each entry by its id). Left to
    # itself the planner starts from the user's rows and runs the MATCH once per row, which is
    # hundreds of times slower; the unary + keeps the (owner, uid) index out of its choices.
    # bm25 is lower for a better match.
    scope = [f"+{ENTRY_TABLE}.owner_id = %s", f"+{ENTRY_TABLE}.uid = %s"]
    params: list[object] = [fts_phrase(query_text), owner_id, uid]
    if kind:
        scope.append(f"+{ENTRY_TABLE}.kind = %s")
        params.append(kind)
    return MemoryEntry.objects.extra(
        select={"relevance": f"bm25({FTS_TABLE}, {KEY_WEIGHT}, {VALUE_WEIGHT})"},
        tables=[FTS_TABLE],
        where=[f"{FTS_TABLE} MATCH %s", f"{ENTRY_TABLE}.id = {FTS_TABLE}.rowid", *scope],
        params=params,
        order_by=["relevance", "-updated", "-id"],
    )
