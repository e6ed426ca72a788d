"""Lexical search over one user's entries: which entries match a query, and how they rank.

The rule that decides which entries match (never anything of another account or user):
- the query is folded (memories.folding) and split into words; words in double quotes are one phrase;
- question and function words (STOP_WORDS: "what", "does", "she", "the" ...) are left out, unless the
  query holds nothing else, in which case the whole query is one phrase;
- an entry matches when its folded key or value holds any of the query's words of 3 or more characters
  or any phrase as a substring (so "vim" finds "neovim"), holds a shorter word as a whole word, or
  holds the whole query as a substring (so every entry today's substring scan finds is still found).

The order: the entries that hold a query word as a whole word are the candidates, ranked by bm25 over
the words index on SQLite (hub-wide word statistics: rarer words weigh more, a word in the key four
times one in the value) and by ts_rank on PostgreSQL, best first, ties newest first. At most RANK_CAP
candidates are ranked (the most recently created ones when more hold the words), so a common word costs
what a rare one does; every other match follows, newest first, so every match is reachable by paging.
Counts are exact up to COUNT_LIMIT matches and say so beyond.

SQLite indexes (migration 0004): memories_memoryentry_fts (trigram) for substrings, over the whole
hub; memories_memoryentry_words (unicode61) for words, whose scope column holds one token per account
and user, so ranking and counting read that user's rows alone. PostgreSQL: a GIN index over the words
of the folded key and value, and pg_trgm indexes over both for substrings.
"""

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import overload

from django.db import connection
from django.db.models import Q, QuerySet, TextChoices
from django.db.models.expressions import RawSQL

from memories.folding import fold
from memories.models import MemoryEntry

# Substrings shorter than this cannot use a trigram index.
MIN_INDEXED_LENGTH = 3
# Candidates ranked exactly per query; matches beyond them follow newest first.
RANK_CAP = 200
# SQLite: a query whose words more entries of the hub hold than this reads the user's rows alone.
HUB_PROBE_LIMIT = 2000
# Counts are exact up to this many matches; beyond, the count is COUNT_LIMIT + 1 and marked inexact.
COUNT_LIMIT = 1000
FTS_TABLE = "memories_memoryentry_fts"
WORDS_TABLE = "memories_memoryentry_words"
ENTRY_TABLE = MemoryEntry._meta.db_table
# bm25 weights per column of the words index (scope, key, value): the scope token never scores.
SCOPE_WEIGHT, KEY_WEIGHT, VALUE_WEIGHT = 0.0, 4.0, 1.0
# PostgreSQL: how many entries of the hub holding a term are counted for its weight (rarer words weigh more).
DOCUMENT_FREQUENCY_LIMIT = 10_000
# PostgreSQL: the weights of ts_rank for the labels D, C, B, A (value is D, key is A): the same 1:4.
POSTGRES_RANK_WEIGHTS = "{0.25, 0, 0, 1.0}"
# The same expression as the GIN index of migration 0004, so the planner can use it.
POSTGRES_WORDS = (
    f"(setweight(to_tsvector('simple'::regconfig, {ENTRY_TABLE}.key_folded), 'A') || "
    f"setweight(to_tsvector('simple'::regconfig, {ENTRY_TABLE}.value_folded), 'D'))"
)

# Words a question is made of that say nothing about which memory is meant. Folded, like queries.
STOP_WORDS = frozenset(
    """
    a about am an and any are as at be been being but by can could did do does doing done for from
    had has have having he her hers herself him himself his how i if in into is it its itself just
    me my myself no nor not of off on once only or our ours she should so some such than that the
    their theirs them then there these they this those to too us was we were what whats when where
    which while who whom whose why will with would you your yours
    """.split()  # noqa: SIM905 - a paragraph of words reads better than a hundred quoted strings
)
PHRASE_PATTERN = re.compile(r'"([^"]*)"')
# A word as both tokenizers see one: letters and digits (no underscore, which they split on).
WORD_PATTERN = re.compile(r"[^\W_]+")


class Order(TextChoices):
    """The order a page of search results is in."""

    RELEVANCE = "relevance", "best match first"
    NEWEST = "newest", "newest first"


@dataclass(frozen=True)
class LexicalQuery:
    """A query as the index reads it: folded words and phrases."""

    words: tuple[str, ...]
    phrases: tuple[str, ...]
    whole: str

    @property
    def substrings(self) -> tuple[str, ...]:
        """What an entry may hold as a substring to match: long words, phrases, the whole query."""
        found = [text for text in (*self.words, *self.phrases, self.whole) if len(text) >= MIN_INDEXED_LENGTH]
        return tuple(dict.fromkeys(found))

    @property
    def short_words(self) -> tuple[str, ...]:
        """Words too short for a substring index: an entry matches them as whole words."""
        return tuple(word for word in self.words if len(word) < MIN_INDEXED_LENGTH)

    @property
    def ranking_terms(self) -> tuple[str, ...]:
        """The words and phrases bm25 scores; the whole query counts as a phrase when it has several words."""
        terms = [*self.words, *self.phrases]
        whole_words = " ".join(WORD_PATTERN.findall(self.whole))
        if len(whole_words.split()) > 1:
            terms.append(whole_words)
        return tuple(dict.fromkeys(terms))

    @property
    def indexed(self) -> bool:
        """Whether the index can answer (else the caller scans: a lone word of 1 or 2 characters)."""
        return bool(self.substrings)


def query_parse(query_text: str) -> LexicalQuery:
    """The query's folded words (stop words out, unless they are all it has) and quoted phrases."""
    folded = fold(query_text)
    phrases = [" ".join(WORD_PATTERN.findall(phrase)) for phrase in PHRASE_PATTERN.findall(folded)]
    words = list(dict.fromkeys(WORD_PATTERN.findall(PHRASE_PATTERN.sub(" ", folded))))
    content = [word for word in words if word not in STOP_WORDS]
    phrases = [phrase for phrase in phrases if phrase]
    if not content and not phrases and len(words) > 1:
        # Only question words: the query as it was typed, as one phrase.
        phrases, words = [" ".join(words)], []
    elif content or phrases:
        words = content
    return LexicalQuery(words=tuple(words), phrases=tuple(phrases), whole=folded.strip())


@dataclass(frozen=True)
class Candidate:
    """One ranked entry: its score (higher is better) and which of the query's words and phrases it holds."""

    entry_id: int
    score: float
    matched_terms: tuple[str, ...] = ()


def _fts_string(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def scope_token(owner_id: int, uid: str) -> str:
    """The words index's token for one account's user, as migration 0004's triggers write it."""
    return f"s{owner_id}x{uid.encode().hex().upper()}"


def _words_match(owner_id: int, uid: str, terms: tuple[str, ...]) -> str:
    alternatives = " OR ".join(_fts_string(term) for term in terms)
    return f"scope : {_fts_string(scope_token(owner_id, uid))} AND {{key value}} : ({alternatives})"


def _matched_terms(query: LexicalQuery, key_folded: str, value_folded: str) -> tuple[str, ...]:
    return tuple(term for term in (*query.words, *query.phrases) if term in key_folded or term in value_folded)


def _terms_match(terms: tuple[str, ...]) -> str:
    return "{key value} : (" + " OR ".join(_fts_string(term) for term in terms) + ")"


def _candidates_sqlite(
    owner_id: int, uid: str, kind: str | None, query: LexicalQuery, limit: int, *, with_text: bool
) -> list[tuple]:
    """(id, score[, key_folded, value_folded]) best first, ties newest first.

    Two ways to the same rows, chosen by how many entries of the whole hub hold the words (a bounded
    probe, HUB_PROBE_LIMIT rows at most): few, and the hub's hits are read and kept when they are the
    user's (cheapest for a rare word); many, and the user's scope token joins the MATCH, so only the
    user's rows are read. Either way the newest `limit` of the user's hits are ranked by bm25, whose
    scope column weighs nothing, so both ways give the same candidates and the same scores: only
    the time depends on other accounts' data, never the result.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*) FROM (SELECT rowid FROM {WORDS_TABLE} WHERE {WORDS_TABLE} MATCH %s LIMIT %s)",
            [_terms_match(query.ranking_terms), HUB_PROBE_LIMIT + 1],
        )
        hub_hits = cursor.fetchone()[0]
    kind_filter = f" AND +{ENTRY_TABLE}.kind = %s" if kind else ""
    if hub_hits <= HUB_PROBE_LIMIT:
        match = _terms_match(query.ranking_terms)
        scope_filter = f" AND +{ENTRY_TABLE}.owner_id = %s AND +{ENTRY_TABLE}.uid = %s"
        scope_params: list[str | int] = [owner_id, uid]
    else:
        match, scope_filter, scope_params = _words_match(owner_id, uid, query.ranking_terms), "", []
    text = ", key_folded, value_folded" if with_text else ""
    sql = (
        f"SELECT id, score{text} FROM ("
        f"SELECT {ENTRY_TABLE}.id AS id, -bm25({WORDS_TABLE}, {SCOPE_WEIGHT}, {KEY_WEIGHT}, {VALUE_WEIGHT}) AS score, "
        f"{ENTRY_TABLE}.updated AS updated{text.replace(', ', f', {ENTRY_TABLE}.')} "
        f"FROM {WORDS_TABLE} JOIN {ENTRY_TABLE} ON {ENTRY_TABLE}.id = {WORDS_TABLE}.rowid "
        f"WHERE {WORDS_TABLE} MATCH %s{scope_filter}{kind_filter} ORDER BY {WORDS_TABLE}.rowid DESC LIMIT %s"
        f") ORDER BY score DESC, updated DESC, id DESC"
    )
    params: list[str | int] = [match, *scope_params, *([kind] if kind else []), limit]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _postgres_query(terms: tuple[str, ...]) -> tuple[str, list[str]]:
    """A tsquery holding any of the terms (each term's words in sequence), and its parameters."""
    parts = " || ".join("phraseto_tsquery('simple'::regconfig, %s)" for _ in terms)
    return f"({parts})", list(terms)


def _idf(documents: float, holding: float) -> float:
    """bm25's inverse document frequency, kept above zero (as FTS5 keeps its own)."""
    return math.log(1 + (max(documents, holding) - holding + 0.5) / (holding + 0.5))


def _candidates_postgres(
    owner_id: int, uid: str, kind: str | None, query: LexicalQuery, limit: int, *, with_text: bool
) -> list[tuple]:
    """Ranked as bm25 would on SQLite, as far as PostgreSQL allows: ts_rank of each term (a hit in
    the key weighs four times one in the value, more hits weigh more) times the term's inverse
    document frequency over the hub, added up; ts_rank alone knows nothing of rare words."""
    terms = query.ranking_terms
    tsquery, tsquery_params = _postgres_query(terms)
    term_query = "phraseto_tsquery('simple'::regconfig, %s)"
    kind_filter = " AND kind = %s" if kind else ""
    ranks = ", ".join(f"ts_rank('{POSTGRES_RANK_WEIGHTS}', {POSTGRES_WORDS}, {term_query})" for _ in terms)
    frequencies = ", ".join(
        f"(SELECT count(*) FROM (SELECT 1 FROM {ENTRY_TABLE} WHERE {POSTGRES_WORDS} @@ {term_query} LIMIT %s) AS d)"
        for _ in terms
    )
    # MATERIALIZED: the user's hits are gathered through the GIN index first; left to itself, the
    # planner may walk the primary key backwards and test every row of the hub against the query.
    sql = (
        f"WITH hits AS MATERIALIZED (SELECT id FROM {ENTRY_TABLE} WHERE owner_id = %s AND uid = %s{kind_filter} "
        f"AND {POSTGRES_WORDS} @@ {tsquery}), "
        f"newest AS (SELECT id FROM hits ORDER BY id DESC LIMIT %s), "
        # The table's size as of its last ANALYZE (import_memories runs one); never below a term's count.
        f"frequency AS MATERIALIZED (SELECT greatest(reltuples, 1) AS documents, {frequencies} "
        f"FROM pg_class WHERE oid = '{ENTRY_TABLE}'::regclass) "
        f"SELECT {ENTRY_TABLE}.id, {ENTRY_TABLE}.updated, {ENTRY_TABLE}.key_folded, {ENTRY_TABLE}.value_folded, "
        f"frequency.*, {ranks} "
        f"FROM newest JOIN {ENTRY_TABLE} ON {ENTRY_TABLE}.id = newest.id CROSS JOIN frequency"
    )
    params: list[str | int] = [owner_id, uid, *([kind] if kind else []), *tsquery_params, limit]
    for term in terms:
        params += [term, DOCUMENT_FREQUENCY_LIMIT]
    params += terms
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    ranked = []
    for entry_id, updated, key_folded, value_folded, documents, *rest in rows:
        holding, term_ranks = rest[: len(terms)], rest[len(terms) :]
        score = sum(_idf(documents, max(count, 1)) * rank for count, rank in zip(holding, term_ranks, strict=True))
        ranked.append((entry_id, score, updated, key_folded, value_folded))
    ranked.sort(key=lambda row: (-row[1], -row[2].timestamp(), -row[0]))
    return [(row[0], row[1], row[3], row[4]) if with_text else (row[0], row[1]) for row in ranked]


def lexical_candidates(
    *, owner_id: int, uid: str, query_text: str, kind: str | None = None, limit: int = RANK_CAP
) -> list[Candidate]:
    """The entries of (owner_id, uid) that hold any of the query's words as a whole word, best first.

    Each candidate carries its score (bm25 on SQLite, ts_rank on PostgreSQL; higher is better, only
    comparable within one query) and the query's words and phrases it holds. At most limit
    candidates, the most recently created when more hold the words. One query.
    """
    query = query_parse(query_text)
    if not query.ranking_terms:
        return []
    fetch = _candidates_postgres if connection.vendor == "postgresql" else _candidates_sqlite
    return [
        Candidate(entry_id=entry_id, score=score, matched_terms=_matched_terms(query, key_folded, value_folded))
        for entry_id, score, key_folded, value_folded in fetch(owner_id, uid, kind, query, limit, with_text=True)
    ]


def _user_entries(owner_id: int, uid: str, kind: str | None) -> QuerySet[MemoryEntry]:
    entries = MemoryEntry.objects.filter(owner_id=owner_id, uid=uid)
    return entries.filter(kind=kind) if kind else entries


def _short_words_filter(owner_id: int, uid: str, query: LexicalQuery) -> Q:
    if not query.short_words:
        return Q(pk__in=[])
    if connection.vendor == "postgresql":
        tsquery, params = _postgres_query(query.short_words)
        return Q(pk__in=RawSQL(f"SELECT id FROM {ENTRY_TABLE} WHERE {POSTGRES_WORDS} @@ {tsquery}", params))
    return Q(
        pk__in=RawSQL(
            f"SELECT rowid FROM {WORDS_TABLE} WHERE {WORDS_TABLE} MATCH %s",
            [_words_match(owner_id, uid, query.short_words)],
        )
    )


def match_filter(*, owner_id: int, uid: str, query: LexicalQuery) -> Q:
    """The matching rule as a filter on entries (the folded columns are lower case: LIKE is exact on them)."""
    condition = _short_words_filter(owner_id, uid, query)
    for text in query.substrings:
        condition |= Q(key_folded__contains=text) | Q(value_folded__contains=text)
    return condition


def matches(*, owner_id: int, uid: str, kind: str | None, query: LexicalQuery) -> QuerySet[MemoryEntry]:
    """Every entry of (owner_id, uid) that matches the query, unordered."""
    return _user_entries(owner_id, uid, kind).filter(match_filter(owner_id=owner_id, uid=uid, query=query))


def _count_sqlite(owner_id: int, uid: str, kind: str | None, query: LexicalQuery, limit: int) -> int:
    # The trigram index drives (a substring held by few entries of the hub is found at once);
    # the unary + keeps the (owner, uid) index out of the planner's choices.
    kind_filter = f" AND +{ENTRY_TABLE}.kind = %s" if kind else ""
    scope = f"+{ENTRY_TABLE}.owner_id = %s AND +{ENTRY_TABLE}.uid = %s{kind_filter}"
    substrings_part = (
        f"SELECT {FTS_TABLE}.rowid AS id FROM {FTS_TABLE} JOIN {ENTRY_TABLE} ON {ENTRY_TABLE}.id = {FTS_TABLE}.rowid "
        f"WHERE {FTS_TABLE} MATCH %s AND {scope}"
    )
    parts = [substrings_part]
    params: list[str | int] = [" OR ".join(_fts_string(text) for text in query.substrings), owner_id, uid]
    params += [kind] if kind else []
    if query.short_words:
        parts.append(
            f"SELECT {WORDS_TABLE}.rowid AS id FROM {WORDS_TABLE} "
            f"JOIN {ENTRY_TABLE} ON {ENTRY_TABLE}.id = {WORDS_TABLE}.rowid WHERE {WORDS_TABLE} MATCH %s{kind_filter}"
        )
        params += [_words_match(owner_id, uid, query.short_words), *([kind] if kind else [])]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM ({' UNION '.join(parts)} LIMIT %s)", [*params, limit])
        return cursor.fetchone()[0]


def _word_count_sqlite(owner_id: int, uid: str, kind: str | None, query: LexicalQuery, limit: int) -> int:
    """How many of the user's entries hold a query word whole, up to limit: the words index alone."""
    if kind:
        sql = (
            f"SELECT count(*) FROM (SELECT {WORDS_TABLE}.rowid FROM {WORDS_TABLE} JOIN {ENTRY_TABLE} "
            f"ON {ENTRY_TABLE}.id = {WORDS_TABLE}.rowid "
            f"WHERE {WORDS_TABLE} MATCH %s AND +{ENTRY_TABLE}.kind = %s LIMIT %s)"
        )
        params: list[str | int] = [_words_match(owner_id, uid, query.ranking_terms), kind, limit]
    else:
        sql = f"SELECT count(*) FROM (SELECT rowid FROM {WORDS_TABLE} WHERE {WORDS_TABLE} MATCH %s LIMIT %s)"
        params = [_words_match(owner_id, uid, query.ranking_terms), limit]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()[0]


class LexicalMatches:
    """One user's matches for a query, in the search's order: ranked candidates, then the rest newest first.

    Sliced like a QuerySet (matches[0:50] is a list of entries, each with .score, None past the ranked
    candidates, and .matched_terms), counted up to COUNT_LIMIT + 1 (count(), count_exact), and
    order_at(offset) names the order the results from that offset on are in.
    """

    def __init__(self, *, owner_id: int, uid: str, kind: str | None, query_text: str) -> None:
        self.owner_id, self.uid, self.kind = owner_id, uid, kind
        self.query = query_parse(query_text)
        self._candidates: list[Candidate] | None = None
        self._count: int | None = None

    @property
    def candidates(self) -> list[Candidate]:
        if self._candidates is None:
            if not self.query.ranking_terms:
                self._candidates = []
            else:
                fetch = _candidates_postgres if connection.vendor == "postgresql" else _candidates_sqlite
                rows = fetch(self.owner_id, self.uid, self.kind, self.query, RANK_CAP, with_text=False)
                self._candidates = [Candidate(entry_id=entry_id, score=score) for entry_id, score in rows]
        return self._candidates

    def count(self) -> int:
        """How many entries match, exactly up to COUNT_LIMIT; COUNT_LIMIT + 1 means more."""
        if self._count is None:
            if connection.vendor == "postgresql":
                self._count = self._queryset()[: COUNT_LIMIT + 1].count()
            elif len(self.candidates) == RANK_CAP and (
                _word_count_sqlite(self.owner_id, self.uid, self.kind, self.query, COUNT_LIMIT + 1) > COUNT_LIMIT
            ):
                # More than COUNT_LIMIT hold a word whole: no need to count the substrings too.
                self._count = COUNT_LIMIT + 1
            else:
                self._count = _count_sqlite(self.owner_id, self.uid, self.kind, self.query, COUNT_LIMIT + 1)
        return self._count

    @property
    def count_exact(self) -> bool:
        return self.count() <= COUNT_LIMIT

    def __len__(self) -> int:
        return self.count()

    def order_at(self, offset: int) -> Order:
        return Order.RELEVANCE if offset < len(self.candidates) else Order.NEWEST

    def _queryset(self) -> QuerySet[MemoryEntry]:
        return matches(owner_id=self.owner_id, uid=self.uid, kind=self.kind, query=self.query)

    def __iter__(self) -> Iterator[MemoryEntry]:
        """Every match: the ranked candidates, then all the others newest first."""
        yield from self[0 : len(self.candidates)]
        for entry in self._tail():
            entry.score = None
            entry.matched_terms = _matched_terms(self.query, entry.key_folded, entry.value_folded)
            yield entry

    def _tail(self) -> QuerySet[MemoryEntry]:
        ranked_ids = [candidate.entry_id for candidate in self.candidates]
        return self._queryset().exclude(pk__in=ranked_ids).order_by("-updated", "-id")

    def entry_ids(self, limit: int) -> list[int]:
        """The ids of self[0:limit], in order, without reading the entries (for callers that read
        only a few of their columns)."""
        ids = [candidate.entry_id for candidate in self.candidates[:limit]]
        wanted = limit - len(ids)
        if wanted > 0 and self.count() > len(self.candidates):
            ids += self._tail().values_list("pk", flat=True)[:wanted]
        return ids

    @overload
    def __getitem__(self, index: int) -> MemoryEntry: ...

    @overload
    def __getitem__(self, index: slice) -> list[MemoryEntry]: ...

    def __getitem__(self, index: int | slice) -> MemoryEntry | list[MemoryEntry]:
        if isinstance(index, int):
            one = self[index : index + 1]
            if not one:
                raise IndexError(index)
            return one[0]
        if index.step not in (None, 1):
            raise TypeError("LexicalMatches takes slices with a step of 1")
        start, stop = index.start or 0, index.stop
        if stop is None or start < 0 or stop < start:
            raise ValueError("LexicalMatches takes slices with a start and a stop, from 0 on")
        head = self.candidates[start:stop]
        entries_by_id = MemoryEntry.objects.in_bulk([candidate.entry_id for candidate in head]) if head else {}
        found: list[MemoryEntry] = []
        for candidate in head:
            entry = entries_by_id.get(candidate.entry_id)
            if entry is not None:
                entry.score = candidate.score
                entry.matched_terms = _matched_terms(self.query, entry.key_folded, entry.value_folded)
                found.append(entry)
        wanted = stop - start - len(head)
        if wanted > 0 and self.count() > len(self.candidates):
            tail_start = max(0, start - len(self.candidates))
            for entry in self._tail()[tail_start : tail_start + wanted]:
                entry.score = None
                entry.matched_terms = _matched_terms(self.query, entry.key_folded, entry.value_folded)
                found.append(entry)
        return found
