"""Lexical search over one user's entries: which entries match a query, and how they rank.

The rule that decides which entries match (never anything of another account or user):
- the query is folded (memories.folding) and split into words; words in double quotes are one phrase;
- question and function words (STOP_WORDS: "what", "does", "she", "the" ...) are left out, unless the
  query holds nothing else, in which case the whole query is one phrase;
- an entry matches when its folded key or value holds any of the query's words of 3 or more characters
  or any phrase as a substring (so "vim" finds "neovim"), holds a shorter word as a whole word, or
  holds the whole query as a substring (so every entry today's substring scan finds is still found).

Typos: a query word of TYPO_MIN_LENGTH letters or more that no entry of the user holds whole, and that is no
word of the language as written (memories.search.dictionary: "play" is one, "wich" is not), is also
sought one edit away; the words one edit away that the user's own entries hold whole (kept in memory:
memories.search.vocabulary) become terms of the query (LexicalQuery.variants), matched and ranked like
its words.

The order: the entries that hold a query term as a whole word are the candidates, ranked by bm25 over
the words index on SQLite (hub-wide word statistics: rarer words weigh more, a word in the key four
times one in the value) and by ts_rank on PostgreSQL, best first, ties newest first. Each term brings
at most RANK_CAP candidates (the most recently created ones when more hold it) and the best RANK_CAP
are kept, so a common word costs what a rare one does and cannot crowd out a rare one; every other
match follows, newest first, so every match is reachable by paging.
Counts are exact up to COUNT_LIMIT matches and say so beyond.

SQLite indexes (migrations 0007 and 0009): memories_memoryentry_fts (trigram) for substrings and
memories_memoryentry_words (unicode61) for words, both keyed by user: a row's rowid is the user's
number (memories_searchscope) << 32 plus the entry's id, so every search reads one user's range of
rowids of each index and nothing of other users (bm25's word statistics are still the hub's).
Matches past the ranked candidates come newest first: when at most COUNT_LIMIT entries match, the
indexes give their ids; beyond, the user's entries are read newest first until the page is full.
PostgreSQL (migration 0020): each entry's words are a stored tsvector (POSTGRES_WORDS_COLUMN), made when
it is written; a GIN index over them and pg_trgm GIN indexes over the folded key and value for substrings,
each leading with (owner_id, uid) through btree_gin, so a search reads one user's rows of them alone.
"""

import dataclasses
import functools
import math
import re
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, overload

from django.db import connection
from django.db.models import Q, QuerySet, TextChoices
from django.db.models.expressions import RawSQL

from memories.filters import EntryFilter, filter_with_kind
from memories.folding import fold
from memories.models import MemoryEntry
from memories.rows import entries_from_rows, entry_columns, entry_shown_values, shown_columns, shown_values
from memories.search.dictionary import known_words
from memories.search.marks import POSTGRES_MARK_EXPRESSION, Mark, postgres_mark
from memories.search.vocabulary import user_words, user_words_kept, user_words_unchanged

# Substrings shorter than this cannot use a trigram index.
MIN_INDEXED_LENGTH = 3
# Candidates ranked exactly per query; matches beyond them follow newest first.
RANK_CAP = 200
# Counts are exact up to this many matches; beyond, the count is COUNT_LIMIT + 1 and marked inexact.
COUNT_LIMIT = 1000
# SQLite: a count of a word's holders looks past at most this many expired entries of the hub, not yet removed,
# without reading the holders' entries (_word_count_sqlite).
EXPIRED_LOOKED_PAST = 1000
# A query searches for at most this many of its words, phrases and typos' variants (the first ones it
# holds): each is one term of the statements that gather and rank, which SQLite caps at 500.
QUERY_MAX_WORDS = 64
QUERY_MAX_PHRASES = 16
QUERY_MAX_VARIANTS = 128
# Typos: a query word of at least this many letters that none of the user's entries holds whole is also
# sought one edit away (a letter left out, added or changed, or two neighbours swapped).
TYPO_MIN_LENGTH = 4
FTS_TABLE = "memories_memoryentry_fts"
SCOPE_TABLE = "memories_searchscope"
# Both SQLite indexes' rowid is the user's number (SCOPE_TABLE) times this, plus the entry's id.
USER_ROWID_SPAN = 2**32
WORDS_TABLE = "memories_memoryentry_words"
ENTRY_TABLE = MemoryEntry._meta.db_table
# bm25 weights per column of the words index (scope, key, value): the scope token never scores.
SCOPE_WEIGHT, KEY_WEIGHT, VALUE_WEIGHT = 0.0, 4.0, 1.0
# PostgreSQL: how many entries of the hub holding a term are counted for its weight (rarer words weigh more),
# when the planner's statistics do not say (before the first ANALYZE).
DOCUMENT_FREQUENCY_LIMIT = 10_000
# PostgreSQL: a term the statistics say at least this share of the entries hold is gathered by reading the
# user's entries newest first until enough hold it, not all its holders from the GIN index (_candidates_postgres).
COMMON_WORD_SHARE = 0.1
# PostgreSQL: how long a process keeps the words' statistics (they change with each ANALYZE).
WORD_STATISTICS_SECONDS = 60.0
# The entry's words, weighted (the folded key A, the folded value D): a stored column, generated from them
# (migration 0020), whose statistics say how common each word is.
POSTGRES_WORDS_COLUMN = "folded_words"
# The GIN index over (owner_id, uid, POSTGRES_WORDS_COLUMN) (migration 0020).
POSTGRES_WORDS_INDEX = "memory_entry_folded_words"
# PostgreSQL: every GIN index a search reads, the words one and the substrings' over the folded key and value.
POSTGRES_SEARCH_INDEXES = (POSTGRES_WORDS_INDEX, "memory_entry_key_folded_trgm", "memory_entry_value_folded_trgm")
# PostgreSQL: the weights of ts_rank for the labels D, C, B, A (value is D, key is A): the same 1:4.
POSTGRES_RANK_WEIGHTS = "{0.25, 0, 0, 1.0}"
# ts_rank's normalization: none. Dividing by the entry's length (1 or 2, as bm25 weighs length) ranked an
# entry holding one word in its key above one holding both words asked for, which bm25 does not.
POSTGRES_RANK_NORMALIZATION = 0
POSTGRES_WORDS = f"{ENTRY_TABLE}.{POSTGRES_WORDS_COLUMN}"

# Words a question is made of that say nothing about which memory is meant. Folded, like queries; the last line is
# what is left of a contraction or a possessive ("what's", "don't", "she'd", "kid's"), which folding splits off as a
# word of its own that any entry holding another such word would match.
STOP_WORDS = frozenset(
    """
    a about am an and any are as at be been being but by can could did do does doing done for from
    had has have having he her hers herself him himself his how i if in into is it its itself just
    me my myself no nor not of off on once only or our ours she should so some such than that the
    their theirs them then there these they this those to too us was we were what whats when where
    which while who whom whose why will with would you your yours
    s t d ll m re ve
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
    # Words one edit away from a query word no searched entry holds, that some of the user's entries hold
    # whole (typo_variants_find): matched as whole words and ranked like the query's own words.
    variants: tuple[str, ...] = ()

    @property
    def substrings(self) -> tuple[str, ...]:
        """What an entry may hold as a substring to match: long words, phrases, the whole query. The whole
        query is left out when a word or phrase it holds is there: every entry holding the whole query holds
        that word too, and the index's search for a long query (many trigrams) costs the most."""
        parts = [text for text in (*self.words, *self.phrases) if len(text) >= MIN_INDEXED_LENGTH]
        if len(self.whole) >= MIN_INDEXED_LENGTH and not any(part in self.whole for part in parts):
            parts.append(self.whole)
        return tuple(dict.fromkeys(parts))

    @property
    def short_words(self) -> tuple[str, ...]:
        """Words too short for a substring index: an entry matches them as whole words."""
        return tuple(word for word in self.words if len(word) < MIN_INDEXED_LENGTH)

    @functools.cached_property
    def whole_words(self) -> tuple[str, ...]:
        """What an entry may hold as a whole word to match: the short words and the typos' variants."""
        return tuple(dict.fromkeys((*self.short_words, *self.variants)))

    @property
    def typo_candidates(self) -> tuple[str, ...]:
        """The words that may be misspelt, or written in another form than the entries': letters only, at least
        TYPO_MIN_LENGTH of them."""
        return tuple(word for word in self.words if len(word) >= TYPO_MIN_LENGTH and word.isalpha())

    @property
    def own_terms(self) -> tuple[str, ...]:
        """The words and phrases of the query itself; the whole query counts as a phrase when it has several words."""
        terms = [*self.words, *self.phrases]
        whole_words = " ".join(WORD_PATTERN.findall(self.whole))
        if len(whole_words.split()) > 1:
            terms.append(whole_words)
        return tuple(dict.fromkeys(terms))

    @property
    def variant_terms(self) -> tuple[str, ...]:
        """The typos' variants that are not terms of the query already."""
        own = set(self.own_terms)
        return tuple(variant for variant in self.variants if variant not in own)

    @property
    def ranking_terms(self) -> tuple[str, ...]:
        """The terms bm25 scores: the query's own, then its typos' variants."""
        return (*self.own_terms, *self.variant_terms)

    def variants_of(self, word: str) -> tuple[str, ...]:
        """The typos' variants that stand for word (one edit away from it, or its singular)."""
        if not self.variants:
            return ()
        near = word_variants(word) | _singular(word)
        return tuple(variant for variant in self.variants if variant in near)

    @property
    def named_terms(self) -> tuple[str, ...]:
        """The terms a result names as matched (matched_terms): words, phrases and typos' variants."""
        return (*self.words, *self.phrases, *self.variants)

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
    return LexicalQuery(
        words=tuple(words[:QUERY_MAX_WORDS]), phrases=tuple(phrases[:QUERY_MAX_PHRASES]), whole=folded.strip()
    )


class Candidate(NamedTuple):
    """One ranked entry: its score (higher is better) and which of the query's words and phrases it holds. A
    named tuple: a page ranks up to RANK_CAP of them, and a frozen dataclass took three times as long to make."""

    entry_id: int
    score: float
    matched_terms: tuple[str, ...] = ()


def _fts_string(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _user_rows(table: str, owner_id: int, uid: str) -> tuple[str, list[str | int]]:
    """A condition keeping one user's rows of a search index, its range of rowids (migration 0009), and its
    parameters. A user with no number (never an entry) has no range: nothing is kept."""
    number = f"(SELECT id FROM {SCOPE_TABLE} WHERE owner_id = %s AND uid = %s)"
    condition = (
        f"{table}.rowid BETWEEN {number} * {USER_ROWID_SPAN} AND {number} * {USER_ROWID_SPAN} + {USER_ROWID_SPAN - 1}"
    )
    return condition, [owner_id, uid, owner_id, uid]


def _entry_id(table: str) -> str:
    """The entry's id in a row of a search index (the rowid's low half)."""
    return f"({table}.rowid & {USER_ROWID_SPAN - 1})"


def matched_terms(query: LexicalQuery, key_folded: str, value_folded: str) -> tuple[str, ...]:
    """The query's named terms the folded key or value holds as the search matches them: a short word or a typo's
    variant as a whole word ("e" is not in "email", "plan" not in "planning"), the rest as a substring."""
    whole_only = query.whole_words
    return tuple(
        term
        for term in query.named_terms
        if (term in key_folded or term in value_folded)
        and (term not in whole_only or _held_whole(term, [(key_folded, value_folded)]))
    )


def _terms_match(terms: tuple[str, ...]) -> str:
    return "{key value} : (" + " OR ".join(_fts_string(term) for term in terms) + ")"


def _words_ids_sqlite(owner_id: int, uid: str, terms: tuple[str, ...]) -> tuple[str, list[str | int]]:
    """SQL selecting the ids of the user's entries holding any of the terms as whole words, and its parameters."""
    rows, params = _user_rows(WORDS_TABLE, owner_id, uid)
    sql = f"SELECT {_entry_id(WORDS_TABLE)} AS id FROM {WORDS_TABLE} WHERE {WORDS_TABLE} MATCH %s AND {rows}"
    return sql, [_terms_match(terms), *params]


def _candidates_sqlite(
    owner_id: int, uid: str, filters: EntryFilter, query: LexicalQuery, limit: int, *, with_text: bool
) -> list[tuple]:
    """(id, score[, key_folded, value_folded]) best first, ties newest first.

    Each of the query's terms (its words, its phrases, the whole query as a phrase, its typos'
    variants) gathers the newest `limit` of the user's entries holding it, read from the user's range
    of the words index alone, with its bm25 (hub-wide word statistics; the scope column weighs
    nothing); an entry's score is the sum over the terms that gathered it (bm25 is a sum over the
    terms), and the best `limit` are kept. Gathered term by term, a common word cannot crowd out the
    entries holding a rare one; an entry a common word did not gather (past its newest `limit`) misses
    that word's share, which is small (a common word weighs little).
    """
    filter_sql, filter_params = filters.sql()
    text = ", key_folded, value_folded" if with_text else ""
    gathers: list[str] = []
    params: list[str | int] = []
    for term in query.ranking_terms:
        rows, rows_params = _user_rows(WORDS_TABLE, owner_id, uid)
        gathers.append(
            f"SELECT * FROM (SELECT {ENTRY_TABLE}.id AS id, "
            f"-bm25({WORDS_TABLE}, {SCOPE_WEIGHT}, {KEY_WEIGHT}, {VALUE_WEIGHT}) AS score, "
            f"{ENTRY_TABLE}.updated AS updated{text.replace(', ', f', {ENTRY_TABLE}.')} "
            f"FROM {WORDS_TABLE} JOIN {ENTRY_TABLE} ON {ENTRY_TABLE}.id = {_entry_id(WORDS_TABLE)} "
            f"WHERE {WORDS_TABLE} MATCH %s AND {rows}{filter_sql} ORDER BY {WORDS_TABLE}.rowid DESC LIMIT %s)"
        )
        params += [_terms_match((term,)), *rows_params, *filter_params, limit]
    if len(gathers) == 1:
        # One term: its gather is the ranking (the sum of one score is that score), without the grouping.
        sql = f"SELECT id, score{text} FROM ({gathers[0]}) ORDER BY score DESC, updated DESC, id DESC LIMIT %s"
    else:
        sql = (
            f"SELECT id, sum(score) AS score{text} FROM ({' UNION ALL '.join(gathers)}) GROUP BY id "
            f"ORDER BY score DESC, max(updated) DESC, id DESC LIMIT %s"
        )
    params.append(limit)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _postgres_query(terms: tuple[str, ...]) -> tuple[str, list[str]]:
    """A tsquery holding any of the terms (each term's words in sequence), and its parameters."""
    parts = " || ".join("phraseto_tsquery('simple'::regconfig, %s)" for _ in terms)
    return f"({parts})", list(terms)


@dataclass(frozen=True)
class WordStatistics:
    """PostgreSQL's statistics of the entries' words, from the entry table's last ANALYZE: the table's size,
    the most common words with the share of entries holding each, and the least share listed (a word not
    listed is held by fewer)."""

    documents: float
    common: dict[str, float]
    least_listed: float

    def holding(self, word: str) -> float | None:
        """How many entries hold the word, when it is a common one (else None: count it)."""
        share = self.common.get(word)
        return None if share is None else share * self.documents


_statistics_lock = threading.Lock()
# (read at, the statistics or None when there are none yet), per database alias.
_statistics: dict[str, tuple[float, WordStatistics | None]] = {}


def _word_statistics_postgres() -> WordStatistics | None:
    """The words' statistics (pg_stats of POSTGRES_WORDS_COLUMN), read at most every
    WORD_STATISTICS_SECONDS per process; None before the first ANALYZE has made them."""
    now = time.monotonic()
    with _statistics_lock:
        read_at, cached = _statistics.get(connection.alias, (-math.inf, None))
    if now - read_at < WORD_STATISTICS_SECONDS:
        return cached
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT greatest(c.reltuples, 1), s.most_common_elems::text::text[], s.most_common_elem_freqs "
            "FROM pg_class AS c LEFT JOIN pg_stats AS s ON s.schemaname = current_schema() AND s.tablename = %s "
            "AND s.attname = %s WHERE c.oid = %s::regclass",
            [ENTRY_TABLE, POSTGRES_WORDS_COLUMN, ENTRY_TABLE],
        )
        row = cursor.fetchone()
    statistics = None
    if row is not None and row[1] and row[2]:
        documents, words, shares = row
        # The shares of the words listed, then (after as many as there are words) the least and greatest of them,
        # and for arrays, not tsvectors, the share of empty rows: the least is read from the words' own.
        statistics = WordStatistics(
            documents=float(documents),
            common=dict(zip(words, shares, strict=False)),
            least_listed=min(shares[: len(words)]),
        )
    with _statistics_lock:
        _statistics[connection.alias] = (now, statistics)
    return statistics


def word_statistics_clear() -> None:
    """Read PostgreSQL's word statistics again at the next search (after an ANALYZE)."""
    with _statistics_lock:
        _statistics.clear()


@dataclass(frozen=True)
class PostgresCandidates:
    """What one statement on PostgreSQL answers for a query: the ranked candidates (as _candidates_sqlite's
    rows), the query's terms that some entry holds whole (among those the filter lets through), and, when
    asked, how many entries match (_count_postgres' answer)."""

    rows: list[tuple]
    held: frozenset[str]
    count: int | None
    # The database's mark as the statement read (memories.search.marks; None where there is none).
    mark: Mark | None = None


def _candidates_postgres(
    owner_id: int,
    uid: str,
    filters: EntryFilter,
    query: LexicalQuery,
    limit: int,
    *,
    with_text: bool,
    count_limit: int | None = None,
) -> PostgresCandidates:
    """Ranked as bm25 would on SQLite, as far as PostgreSQL allows: ts_rank of each term (a hit in
    the key weighs four times one in the value, more hits weigh more) times the term's inverse
    document frequency over the hub, added up; ts_rank alone knows nothing of rare words.

    How many entries hold a word: a common word's share is read from the planner's statistics (no
    scan); a rarer one is counted through the GIN index, up to what the least common listed word holds
    (a few rows); a phrase holds at most what its rarest word does. Before any ANALYZE, every term is
    counted, up to DOCUMENT_FREQUENCY_LIMIT.

    One statement: the scores are added up, and the candidates ordered, in the server (each candidate's
    words are stored, migration 0020); it also says which terms some entry holds (a typo is sought only for
    a word none holds) and, with count_limit, how many entries match (_count_postgres), so a page of few
    candidates asks for no count of its own. The terms are parameters: an array for their weights, and each
    term's own for its gather, whose way of reading (the GIN index, or the user's entries newest first for a
    common word) is written in the statement's text, so a plan the server keeps for the text reads as it was
    meant to (a plan kept for any term read every holder of a common word, 9.6 ms where reading newest first
    takes 0.3).
    """
    terms = query.ranking_terms
    statistics = _word_statistics_postgres()
    # Per term: a known count, or None to count it up to counted_limit.
    known: dict[str, float] = {}
    if statistics is not None:
        for term in terms:
            holding = statistics.holding(term)
            if holding is not None:
                known[term] = holding
        for term in terms:
            words = term.split()
            # A phrase of common words holds at most what its rarest word holds.
            if len(words) > 1 and all(word in known for word in words):
                known[term] = min(known[word] for word in words)
    counted_limit = (
        DOCUMENT_FREQUENCY_LIMIT
        if statistics is None
        else max(1, min(DOCUMENT_FREQUENCY_LIMIT, math.ceil(statistics.least_listed * statistics.documents) + 1))
    )
    filter_sql, filter_params = filters.sql()
    text = ", candidate.key_folded, candidate.value_folded" if with_text else ""
    user_sql = f"owner_id = %s AND uid = %s{filter_sql}"
    words_sql = f"{POSTGRES_WORDS} @@ phraseto_tsquery('simple'::regconfig, %s)"

    def holding_params(term: str) -> list[Any]:
        return [owner_id, uid, *filter_params, term]

    # Each term gathers the newest `limit` of the user's entries holding it (as on SQLite, so a common word
    # cannot crowd out a rare one), each term in its own part of the statement, read as suits how common the
    # statistics say it is. A term held by fewer than COMMON_WORD_SHARE of the entries: its holders from the
    # GIN index (OFFSET 0 keeps the planner from reading the user's entries in order instead), the newest of
    # them kept. A more common one: the user's entries read newest first (memory_entry_user_updated_live) until
    # `limit` hold it (the test written so that no index answers it), a few hundred rows where its holders are
    # thousands. Each way is fixed in the statement's text, so it holds whatever plan the server keeps.
    common = {
        term
        for term in terms
        if statistics is not None and term in known and known[term] >= COMMON_WORD_SHARE * statistics.documents
    }

    def holds(term: str) -> str:
        """The test that an entry holds term: for a common one, written so that no index answers it."""
        return f"({words_sql}) IS TRUE" if term in common else words_sql

    def gather(term: str) -> str:
        if term in common:
            return (
                f"SELECT id FROM {ENTRY_TABLE} WHERE {user_sql} AND {holds(term)} "
                "ORDER BY updated DESC, id DESC LIMIT %s"
            )
        return (
            f"SELECT hits.id FROM (SELECT id, updated FROM {ENTRY_TABLE} WHERE {user_sql} AND {holds(term)} "
            "OFFSET 0) AS hits ORDER BY hits.updated DESC, hits.id DESC LIMIT %s"
        )

    gathers = " UNION ALL ".join(
        f"SELECT {number}::bigint AS n, newest.id FROM ({gather(term)}) AS newest"
        for number, term in enumerate(terms, start=1)
    )
    gathers_params = [param for term in terms for param in (*holding_params(term), limit)]
    count_sql, count_params = "NULL::bigint", list[Any]()
    if count_limit is not None:
        count_sql, count_params = _count_postgres_sql(owner_id, uid, filters, query, count_limit)
        # An entry that holds a term whole matches (as on SQLite, LexicalMatches.count): when count_limit of the
        # user's entries hold one term, that is the count, and the matches are not counted one by one (for a
        # common word, a few thousand rows read for their substrings). Asked only of a term that gathered
        # `limit` holders: one that gathered fewer has fewer.
        held_by_many = " OR ".join(
            f"((SELECT count(*) FROM gathered WHERE gathered.n = {number}) >= %s AND (SELECT count(*) FROM "
            f"(SELECT 1 FROM {ENTRY_TABLE} WHERE {user_sql} AND {holds(term)} LIMIT %s) AS holders) >= %s)"
            for number, term in enumerate(terms, start=1)
        )
        many_params = [param for term in terms for param in (limit, *holding_params(term), count_limit, count_limit)]
        count_sql = f"CASE WHEN {held_by_many} THEN %s ELSE ({count_sql}) END"
        count_params = [*many_params, count_limit, *count_params]
    sql = (
        # Each term, in the query's order, with its count when the statistics know it.
        "WITH terms AS MATERIALIZED (SELECT term.n, phraseto_tsquery('simple'::regconfig, term.text) AS tsquery, "
        "term.known FROM unnest(%s::text[], %s::float8[]) WITH ORDINALITY AS term(text, known, n)), "
        f"gathered AS MATERIALIZED ({gathers}), "
        # Each term's inverse document frequency as bm25 takes it, kept above zero as FTS5 keeps its own
        # (ln(1 + (documents - holding + 0.5) / (holding + 0.5))), over the table's size as of its last ANALYZE
        # (import_memories runs one), never below a term's count.
        "holdings AS MATERIALIZED (SELECT terms.n, terms.tsquery, greatest(coalesce(terms.known, (SELECT count(*) "
        f"FROM (SELECT 1 FROM {ENTRY_TABLE} WHERE {POSTGRES_WORDS} @@ terms.tsquery LIMIT %s) AS d)), 1)::float8 "
        "AS held_by FROM terms), "
        "weights AS MATERIALIZED (SELECT holdings.n, holdings.tsquery, "
        "ln(1 + (greatest(documents.n, holdings.held_by) - holdings.held_by + 0.5) / (holdings.held_by + 0.5)) AS idf "
        "FROM holdings CROSS JOIN (SELECT greatest(reltuples, 1)::float8 AS n FROM pg_class "
        f"WHERE oid = '{ENTRY_TABLE}'::regclass) AS documents), "
        # Each candidate's score: its terms' shares, added up in the terms' order.
        f"ranked AS (SELECT candidate.id, candidate.updated{text}, (SELECT sum(weights.idf * "
        f"ts_rank('{POSTGRES_RANK_WEIGHTS}', candidate.{POSTGRES_WORDS_COLUMN}, weights.tsquery, "
        f"{POSTGRES_RANK_NORMALIZATION}) ORDER BY weights.n) FROM weights) AS score "
        f"FROM (SELECT DISTINCT id FROM gathered) AS picked "
        f"JOIN {ENTRY_TABLE} AS candidate ON candidate.id = picked.id "
        "ORDER BY score DESC, candidate.updated DESC, candidate.id DESC LIMIT %s) "
        # One row at least, for what holds of the whole query when no entry is a candidate.
        f"SELECT ranked.id, ranked.score{text.replace('candidate.', 'ranked.')}, "
        "(SELECT array_agg(EXISTS (SELECT 1 FROM gathered WHERE gathered.n = terms.n) ORDER BY terms.n) FROM terms), "
        f"{count_sql}, {POSTGRES_MARK_EXPRESSION} FROM (SELECT 1) AS one LEFT JOIN ranked ON true "
        "ORDER BY ranked.score DESC, ranked.updated DESC, ranked.id DESC"
    )
    params: list[Any] = [
        list(terms),
        [known.get(term) for term in terms],
        *gathers_params,
        counted_limit,
        limit,
        *count_params,
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    first = rows[0]
    width = 4 if with_text else 2
    return PostgresCandidates(
        rows=[row[:width] for row in rows if row[0] is not None],
        held=frozenset(term for term, holds in zip(terms, first[width], strict=True) if holds),
        count=first[width + 1],
        mark=postgres_mark(first[width + 2]),
    )


# What a substitution or an insertion may put in a word, besides the word's own letters.
TYPO_ALPHABET = "abcdefghijklmnopqrstuvwxyz"


def word_variants(word: str) -> frozenset[str]:
    """The words one edit away from word (a letter left out, added or changed, two neighbours swapped),
    but stop words."""
    letters = sorted(set(TYPO_ALPHABET) | set(word))
    splits = [(word[:cut], word[cut:]) for cut in range(len(word) + 1)]
    found = {head + tail[1:] for head, tail in splits if tail}
    found |= {head + tail[1] + tail[0] + tail[2:] for head, tail in splits if len(tail) > 1}
    found |= {head + letter + tail[1:] for head, tail in splits if tail for letter in letters}
    found |= {head + letter + tail for head, tail in splits for letter in letters}
    return frozenset(found - {word} - STOP_WORDS)


def _words_of(texts: Iterable[str]) -> set[str]:
    return {word for text in texts for word in WORD_PATTERN.findall(text)}


def _held_whole(word: str, candidate_texts: list[tuple[str, str]]) -> bool:
    """Whether any of the texts holds word as a whole word (the first that does ends the search: a common word
    is found in the first text, without splitting every candidate into words)."""
    return any(word in text and word in WORD_PATTERN.findall(text) for texts in candidate_texts for text in texts)


def holds_whole(term: str, key_folded: str, value_folded: str) -> bool:
    """Whether the folded key or value holds term, a word or a phrase of the query, as whole words in a row ("ink"
    is not held by "drinks", nor "art class" by "smart classes")."""
    return any(
        term in text and f" {term} " in f" {' '.join(WORD_PATTERN.findall(text))} "
        for text in (key_folded, value_folded)
    )


def _variants_among(query: LexicalQuery, absent: list[str], words: frozenset[str] | set[str]) -> tuple[str, ...]:
    """The words one edit away from the absent ones (but the query's own words) that words holds, in order. An
    absent word of the language as it is written (memories.search.dictionary: "play", "tennis") is no typo: only
    its singular is sought ("editors" finds "editor"), so "play" does not find "plan" or "pay" (a longer form,
    "plays", holds it as a substring and is found as one)."""
    known = known_words()
    variants = frozenset().union(*(word_variants(word) if word not in known else _singular(word) for word in absent))
    return tuple(sorted((variants - set(query.words)) & words))[:QUERY_MAX_VARIANTS]


def _singular(word: str) -> frozenset[str]:
    """The word without its plural's s ("editors": "editor"), if it has one."""
    return frozenset({word[:-1]} - STOP_WORDS) if word.endswith("s") and not word.endswith("ss") else frozenset()


def typo_variants_find(
    query: LexicalQuery, candidate_texts: list[tuple[str, str]], owner_id: int, uid: str
) -> tuple[str, ...]:
    """The words one edit away from the query's typo candidates that no entry of the user holds whole, which
    some of the user's entries hold whole: what the query's misspelt words most likely meant.

    candidate_texts are the folded key and value of the ranked candidates: a word one of them holds is
    held, and the user's words (memories.search.vocabulary, kept in memory) are read only when a word is
    in none of them.
    """
    absent = [word for word in query.typo_candidates if not _held_whole(word, candidate_texts)]
    if not absent:
        return ()
    words = user_words(owner_id, uid, _words_of)
    absent = [word for word in absent if word not in words]
    if not absent:
        return ()
    return _variants_among(query, absent, words)


def _variants_held(query: LexicalQuery, words: frozenset[str] | set[str]) -> tuple[str, ...]:
    """The words one edit away from the query's typo candidates that are not among the user's words, which
    the user's words hold."""
    absent = [word for word in query.typo_candidates if word not in words]
    if not absent:
        return ()
    return _variants_among(query, absent, words)


def _ranked_postgres(
    owner_id: int,
    uid: str,
    filters: EntryFilter,
    query: LexicalQuery,
    limit: int,
    *,
    with_text: bool,
    count_limit: int | None = None,
) -> tuple[LexicalQuery, PostgresCandidates]:
    """ranked_candidates on PostgreSQL, with what the statement says besides (PostgresCandidates): one
    statement when every word is held by some entry, and when one is not, the user's words
    (memories.search.vocabulary) and a second statement with the typos' variants, if any.

    When the user's words are kept and miss one of the query's words, the variants are found from them first,
    for the one statement (a word no entry holds is in none of the user's words, and one they miss is held by
    no entry). The statement also reads the database's mark: when it is the one the words were checked under,
    they were the user's words; otherwise they are brought up to date (memories.search.vocabulary), and the
    candidates read again if the variants changed.
    """
    kept = user_words_kept(owner_id, uid) if query.typo_candidates else None
    if kept is not None and any(word not in kept.words for word in query.typo_candidates):
        variants = _variants_held(query, kept.words)
        asked = dataclasses.replace(query, variants=variants)
        found = _candidates_postgres(owner_id, uid, filters, asked, limit, with_text=with_text, count_limit=count_limit)
        if found.mark is not None and found.mark.same(kept.mark):
            return asked, found
        fresh = _variants_held(query, user_words(owner_id, uid, _words_of))
        if fresh == variants:
            return asked, found
        query = dataclasses.replace(query, variants=fresh)
        return query, _candidates_postgres(
            owner_id, uid, filters, query, limit, with_text=with_text, count_limit=count_limit
        )
    found = _candidates_postgres(owner_id, uid, filters, query, limit, with_text=with_text, count_limit=count_limit)
    absent = [word for word in query.typo_candidates if word not in found.held]
    if not absent:
        return query, found
    words = user_words(owner_id, uid, _words_of)
    absent = [word for word in absent if word not in words]
    if not absent:
        return query, found
    held_variants = _variants_among(query, absent, words)
    if not held_variants:
        return query, found
    query = dataclasses.replace(query, variants=held_variants)
    return query, _candidates_postgres(
        owner_id, uid, filters, query, limit, with_text=with_text, count_limit=count_limit
    )


def ranked_candidates(
    owner_id: int, uid: str, filters: EntryFilter, query: LexicalQuery, limit: int, *, with_text: bool = True
) -> tuple[LexicalQuery, list[tuple]]:
    """The query with its typos' variants (typo_variants_find), and its ranked candidates (id, score, and with
    with_text key_folded, value_folded), best first: one query when every word is found, three or four when
    one is not. Without with_text the rows may still hold the texts (when they were read for the typos).

    When the user's words are kept and the database is unchanged since (memories.search.vocabulary), the
    variants are found first, from those words alone, and the candidates read once: a word a candidate
    holds is one of the user's words, so the variants are the same as typo_variants_find's.
    """
    if connection.vendor == "postgresql":
        query, found = _ranked_postgres(owner_id, uid, filters, query, limit, with_text=with_text)
        return query, found.rows
    if query.typo_candidates:
        kept = user_words_unchanged(owner_id, uid)
        if kept is not None:
            variants = _variants_held(query, kept)
            if variants:
                query = dataclasses.replace(query, variants=variants)
            return query, _candidates_sqlite(owner_id, uid, filters, query, limit, with_text=with_text)
    # A query of one word that may be misspelt: any candidate holds it (the words index found it there), so
    # it is no typo when there is one, and there are no texts to look at when there is none.
    one_word = query.ranking_terms == query.typo_candidates and len(query.ranking_terms) == 1
    # Otherwise the texts tell which typo candidates the candidates hold.
    texts = with_text or (bool(query.typo_candidates) and not one_word)
    rows = _candidates_sqlite(owner_id, uid, filters, query, limit, with_text=texts)
    if not query.typo_candidates or (one_word and rows):
        return query, rows
    variants = typo_variants_find(query, [(row[2], row[3]) for row in rows], owner_id, uid)
    if not variants:
        return query, rows
    query = dataclasses.replace(query, variants=variants)
    return query, _candidates_sqlite(owner_id, uid, filters, query, limit, with_text=with_text)


def lexical_candidates(
    *,
    owner_id: int,
    uid: str,
    query_text: str,
    kind: str | None = None,
    limit: int = RANK_CAP,
    filters: EntryFilter | None = None,
) -> list[Candidate]:
    """The entries of (owner_id, uid) that hold any of the query's words as a whole word, best first,
    among those the filter lets through (by default: every entry not expired).

    Each candidate carries its score (bm25 on SQLite, ts_rank on PostgreSQL; higher is better, only
    comparable within one query) and the query's words and phrases it holds (and the words a misspelt
    one was taken for). At most limit candidates, the most recently created when more hold the words.
    One query when every word is found (ranked_candidates).
    """
    query = query_parse(query_text)
    if not query.ranking_terms:
        return []
    query, rows = ranked_candidates(owner_id, uid, filter_with_kind(filters, kind), query, limit)
    return [
        Candidate(entry_id=entry_id, score=score, matched_terms=matched_terms(query, key_folded, value_folded))
        for entry_id, score, key_folded, value_folded in rows
    ]


def _user_entries(owner_id: int, uid: str, filters: EntryFilter) -> QuerySet[MemoryEntry]:
    return MemoryEntry.objects.filter(filters.condition(), owner_id=owner_id, uid=uid)


def _match_ids_sqlite(owner_id: int, uid: str, query: LexicalQuery) -> tuple[str, list[str | int]]:
    """SQL selecting the id of every entry of the user that matches the query, through the indexes alone:
    the user's range of the trigram index for substrings, of the words index for short words."""
    parts, params = [], []
    if query.substrings:
        rows, rows_params = _user_rows(FTS_TABLE, owner_id, uid)
        parts.append(f"SELECT {_entry_id(FTS_TABLE)} AS id FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s AND {rows}")
        params += [" OR ".join(_fts_string(text) for text in query.substrings), *rows_params]
    if query.whole_words:
        words, words_params = _words_ids_sqlite(owner_id, uid, query.whole_words)
        parts.append(words)
        params += words_params
    return " UNION ".join(parts), params


def _whole_words_filter(owner_id: int, uid: str, query: LexicalQuery) -> Q:
    if not query.whole_words:
        return Q(pk__in=[])
    tsquery, params = _postgres_query(query.whole_words)
    # The user's rows of the words index alone (migration 0020).
    sql = f"SELECT id FROM {ENTRY_TABLE} WHERE owner_id = %s AND uid = %s AND {POSTGRES_WORDS} @@ {tsquery}"
    return Q(pk__in=RawSQL(sql, [owner_id, uid, *params]))


def match_filter(*, owner_id: int, uid: str, query: LexicalQuery) -> Q:
    """The matching rule as a filter on entries (the folded columns are lower case: LIKE is exact on them)."""
    if connection.vendor != "postgresql":
        if not query.substrings and not query.whole_words:
            return Q(pk__in=[])
        return Q(pk__in=RawSQL(*_match_ids_sqlite(owner_id, uid, query)))
    condition = _whole_words_filter(owner_id, uid, query)
    for text in query.substrings:
        condition |= Q(key_folded__contains=text) | Q(value_folded__contains=text)
    return condition


def matches(
    *, owner_id: int, uid: str, kind: str | None, query: LexicalQuery, filters: EntryFilter | None = None
) -> QuerySet[MemoryEntry]:
    """Every entry of (owner_id, uid) that matches the query and the filter, unordered."""
    entries = _user_entries(owner_id, uid, filter_with_kind(filters, kind))
    return entries.filter(match_filter(owner_id=owner_id, uid=uid, query=query))


def _limited_ids_sqlite(
    table: str, match: str, owner_id: int, uid: str, filters: EntryFilter, limit: int
) -> tuple[str, list[str | int]]:
    """SQL selecting the ids of at most limit of the user's entries that the filter lets through and a search
    index's MATCH finds, and its parameters. Each index row is joined to its entry by id as it is read, so
    the read stops at the limit (an IN over the index's ids would read every match first)."""
    rows, params = _user_rows(table, owner_id, uid)
    filter_sql, filter_params = filters.sql()
    sql = (
        f"SELECT {ENTRY_TABLE}.id AS id FROM {table} JOIN {ENTRY_TABLE} ON {ENTRY_TABLE}.id = {_entry_id(table)} "
        f"WHERE {table} MATCH %s AND {rows}{filter_sql} LIMIT %s"
    )
    return sql, [match, *params, *filter_params, limit]


def _count_sqlite(owner_id: int, uid: str, filters: EntryFilter, query: LexicalQuery, limit: int) -> int:
    """How many of the user's entries match the query (and pass the filter), up to limit: at most limit from
    each index (substrings from the trigram one, short words and typos' variants from the words one), and
    their union, so more than limit in either is more than limit in all."""
    parts: list[str] = []
    params: list[str | int] = []
    if query.substrings:
        match = " OR ".join(_fts_string(text) for text in query.substrings)
        sql, part_params = _limited_ids_sqlite(FTS_TABLE, match, owner_id, uid, filters, limit)
        parts.append(sql)
        params += part_params
    if query.whole_words:
        sql, part_params = _limited_ids_sqlite(
            WORDS_TABLE, _terms_match(query.whole_words), owner_id, uid, filters, limit
        )
        parts.append(sql)
        params += part_params
    if not parts:
        return 0
    if len(parts) == 1:
        sql = f"SELECT count(*) FROM ({parts[0]})"
    else:
        union = " UNION ".join(f"SELECT id FROM ({part})" for part in parts)
        sql = f"SELECT count(*) FROM ({union} LIMIT %s)"
        params.append(limit)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()[0]


def _count_postgres_sql(
    owner_id: int, uid: str, filters: EntryFilter, query: LexicalQuery, limit: int
) -> tuple[str, list[Any]]:
    """SQL counting the user's entries that match the query (and pass the filter), up to limit, and its
    parameters: each substring through the user's rows of the trigram indexes, short words and typos'
    variants through those of the words index. Fixed SQL: matches() through the ORM costs more to compile
    than to run."""
    holds: list[str] = []
    params: list[Any] = []
    for text in query.substrings:
        pattern = f"%{connection.ops.prep_for_like_query(text)}%"
        holds.append(f"{ENTRY_TABLE}.key_folded LIKE %s OR {ENTRY_TABLE}.value_folded LIKE %s")
        params += [pattern, pattern]
    if query.whole_words:
        tsquery, words_params = _postgres_query(query.whole_words)
        holds.append(f"{POSTGRES_WORDS} @@ {tsquery}")
        params += words_params
    if not holds:
        return "SELECT 0", []
    filter_sql, filter_params = filters.sql()
    sql = (
        f"SELECT count(*) FROM (SELECT 1 FROM {ENTRY_TABLE} WHERE owner_id = %s AND uid = %s{filter_sql} "
        f"AND ({' OR '.join(holds)}) LIMIT %s) AS matched"
    )
    return sql, [owner_id, uid, *filter_params, *params, limit]


def _count_postgres(owner_id: int, uid: str, filters: EntryFilter, query: LexicalQuery, limit: int) -> int:
    """How many of the user's entries match the query (and pass the filter), up to limit."""
    sql, params = _count_postgres_sql(owner_id, uid, filters, query, limit)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()[0]


def _tail_sqlite(
    owner_id: int, uid: str, filters: EntryFilter, query: LexicalQuery, *, columns: str, exclude: list[int], many: bool
) -> tuple[str, list[str | int]]:
    """SQL selecting columns of the user's matching entries, but those in exclude, newest first (LIMIT and
    OFFSET to add).

    Few matches (at most COUNT_LIMIT): the indexes give their ids, which are sorted. Many: the user's
    entries are read newest first and tested, so a page stops after its rows (most entries match).
    """
    ids, params = _match_ids_sqlite(owner_id, uid, query)
    if many:
        holds = ["instr(key_folded, %s) > 0 OR instr(value_folded, %s) > 0" for _ in query.substrings]
        params = [owner_id, uid, *(text for text in query.substrings for _ in range(2))]
        if query.whole_words:
            words, words_params = _words_ids_sqlite(owner_id, uid, query.whole_words)
            holds.append(f"id IN ({words})")
            params += words_params
        where = f"owner_id = %s AND uid = %s AND ({' OR '.join(holds)})"
    else:
        where = f"id IN ({ids})"
    filter_sql, filter_params = filters.sql()
    where += filter_sql
    params += filter_params
    if exclude:
        where += f" AND id NOT IN ({', '.join(['%s'] * len(exclude))})"
        params += exclude
    return f"SELECT {columns} FROM {ENTRY_TABLE} WHERE {where} ORDER BY updated DESC, id DESC", params


def _word_count_sqlite(owner_id: int, uid: str, filters: EntryFilter, query: LexicalQuery, limit: int) -> int:
    """How many of the user's entries hold a query word whole (and pass the filter), up to limit.

    Without a kind or meta filter, the user's range of the words index is counted first, alone, beside the
    hub's expired entries not yet removed (the worker removes them): when the range holds limit more than
    those, at least limit of the user's entries pass the filter, and none is read (a common word's count read
    each of its 1,001 entries for its expiry: 0.43 ms where the index alone takes 0.06). Otherwise, or past
    EXPIRED_LOOKED_PAST expired entries, each match's entry is read."""
    match = _terms_match(query.ranking_terms)
    if not filters.narrows:
        rows, rows_params = _user_rows(WORDS_TABLE, owner_id, uid)
        expired: str = "0"
        expired_params: list[Any] = []
        if not filters.include_expired:
            expired = (
                f"(SELECT count(*) FROM (SELECT 1 FROM {ENTRY_TABLE} WHERE expires IS NOT NULL AND expires <= %s "
                "LIMIT %s))"
            )
            expired_params = [filters.moment_parameter, EXPIRED_LOOKED_PAST]
        # The range is counted up to limit past the expired entries, and no further.
        held = (
            f"SELECT count(*) FROM (SELECT 1 FROM {WORDS_TABLE} WHERE {WORDS_TABLE} MATCH %s AND {rows} "
            f"LIMIT %s + {expired})"
        )
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT ({held}), {expired}", [match, *rows_params, limit, *expired_params, *expired_params]
            )
            holding, expired_count = cursor.fetchone()
        if expired_count < EXPIRED_LOOKED_PAST and holding - expired_count >= limit:
            return limit
        if expired_count == 0:
            return min(holding, limit)
    sql, params = _limited_ids_sqlite(WORDS_TABLE, match, owner_id, uid, filters, limit)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM ({sql})", params)
        return cursor.fetchone()[0]


def ids_in(ids: Sequence[int]) -> tuple[str, list[Any]]:
    """A condition that id is one of ids, and its parameters. On PostgreSQL one array parameter (id = ANY): the
    statement's text is then the same for any number of ids, so psycopg keeps its conversion and the server
    its prepared statement (past 50 parameters psycopg parsed the statement anew each time, a fifth of a
    page's read of its entries); elsewhere IN with one parameter per id."""
    if connection.vendor == "postgresql":
        return "id = ANY(%s)", [list(ids)]
    return f"id IN ({', '.join(['%s'] * len(ids))})", list(ids)


def entries_by_id_read(ids: list[int]) -> dict[int, MemoryEntry]:
    """The entries of these ids (ranked candidates: the user's own), by id, in one statement of fixed SQL built
    as the ORM builds its entries (memories.rows), without compiling a QuerySet."""
    condition, params = ids_in(ids)
    sql = f"SELECT {entry_columns(ENTRY_TABLE)} FROM {ENTRY_TABLE} WHERE {condition}"
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return {entry.pk: entry for entry in entries_from_rows(cursor.fetchall())}


# A ranked search's result as a page shows it: the entry's memories.rows.SHOWN_COLUMNS values, then its score,
# matched_terms, lexical_rank, semantic_similarity and relevant (SearchResultSerializer's fields, in its order).
ShownResult = tuple[Any, ...]


def shown_by_id_read(
    ids: list[int], scope_sql: str = "", scope_params: Iterable[Any] = ()
) -> dict[int, tuple[tuple[Any, ...], str, str]]:
    """Of the entries of these ids (and scope_sql, a condition starting with AND), by id: their shown values
    (memories.rows.shown_values) and their folded key and value, in one statement of fixed SQL."""
    condition, ids_params = ids_in(ids)
    sql = (
        f"SELECT {shown_columns(ENTRY_TABLE)}, id, key_folded, value_folded FROM {ENTRY_TABLE} "
        f"WHERE {condition}{scope_sql}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*ids_params, *scope_params])
        rows = cursor.fetchall()
    return {row[-3]: (shown, row[-2], row[-1]) for row, shown in zip(rows, shown_values(rows), strict=True)}


def slice_bounds(index: slice, holder: str) -> tuple[int, int]:
    """A ranked result's slice as (start, stop): a start from 0 on, a stop, no step (what pages ask for)."""
    if index.step not in (None, 1):
        raise TypeError(f"{holder} takes slices with a step of 1")
    start, stop = index.start or 0, index.stop
    if stop is None or start < 0 or stop < start:
        raise ValueError(f"{holder} takes slices with a start and a stop, from 0 on")
    return start, stop


class LexicalMatches:
    """One user's matches for a query, in the search's order: ranked candidates, then the rest newest first.

    Sliced like a QuerySet (matches[0:50] is a list of entries, each with .score, None past the ranked
    candidates, and .matched_terms), counted up to COUNT_LIMIT + 1 (count(), count_exact), and
    order_at(offset) names the order the results from that offset on are in.
    """

    def __init__(
        self,
        *,
        owner_id: int,
        uid: str,
        kind: str | None,
        query_text: str,
        filters: EntryFilter | None = None,
        counted: bool = False,
    ) -> None:
        self.owner_id, self.uid, self.kind = owner_id, uid, kind
        # Whether the caller will count the matches (a page does): PostgreSQL then counts them in the statement
        # that ranks the candidates. Others (a few of the best) are counted by count() only if they ask.
        self.counted = counted
        # What the matches are narrowed to beyond the user: kind folded in, expired entries left out.
        self.filters = filter_with_kind(filters, kind)
        self.parsed = query_parse(query_text)
        self._query: LexicalQuery | None = None
        self._candidates: list[Candidate] | None = None
        self._count: int | None = None
        # PostgreSQL: the database's mark as the ranking statement read it (memories.search.marks), once ranked.
        self.mark: Mark | None = None

    @property
    def query(self) -> LexicalQuery:
        """The query as parsed, with the words its misspelt words were taken for (found with the candidates)."""
        if self._query is None:
            self._rank()
        assert self._query is not None
        return self._query

    @property
    def candidates(self) -> list[Candidate]:
        if self._candidates is None:
            self._rank()
        assert self._candidates is not None
        return self._candidates

    def _rank(self) -> None:
        if not self.parsed.ranking_terms:
            self._query, self._candidates = self.parsed, []
            return
        # Only ids and scores: the page's entries are read with their texts.
        if connection.vendor == "postgresql":
            # When the matches are to be counted, the count comes with the candidates, in the same statement.
            self._query, found = _ranked_postgres(
                self.owner_id,
                self.uid,
                self.filters,
                self.parsed,
                RANK_CAP,
                with_text=False,
                count_limit=COUNT_LIMIT + 1 if self.counted else None,
            )
            rows = found.rows
            if found.count is not None:
                self._count = found.count
            self.mark = found.mark
        else:
            self._query, rows = ranked_candidates(
                self.owner_id, self.uid, self.filters, self.parsed, RANK_CAP, with_text=False
            )
        self._candidates = [Candidate(row[0], row[1]) for row in rows]

    def count(self) -> int:
        """How many entries match, exactly up to COUNT_LIMIT; COUNT_LIMIT + 1 means more."""
        # Ranked first: the query's typos' variants are found with the candidates (and, counted, the count).
        self.candidates  # noqa: B018
        if self._count is None:
            if connection.vendor == "postgresql":
                self._count = _count_postgres(self.owner_id, self.uid, self.filters, self.query, COUNT_LIMIT + 1)
            elif len(self.candidates) == RANK_CAP and (
                _word_count_sqlite(self.owner_id, self.uid, self.filters, self.query, COUNT_LIMIT + 1) > COUNT_LIMIT
            ):
                # More than COUNT_LIMIT hold a word whole: no need to count the substrings too.
                self._count = COUNT_LIMIT + 1
            else:
                self._count = _count_sqlite(self.owner_id, self.uid, self.filters, self.query, COUNT_LIMIT + 1)
        return self._count

    @property
    def count_exact(self) -> bool:
        return self.count() <= COUNT_LIMIT

    def __len__(self) -> int:
        return self.count()

    def order_at(self, offset: int) -> Order:
        return Order.RELEVANCE if offset < len(self.candidates) else Order.NEWEST

    def _queryset(self) -> QuerySet[MemoryEntry]:
        return matches(owner_id=self.owner_id, uid=self.uid, kind=None, query=self.query, filters=self.filters)

    def __iter__(self) -> Iterator[MemoryEntry]:
        """Every match: the ranked candidates, then all the others newest first."""
        yield from self[0 : len(self.candidates)]
        for entry in self._tail():
            entry.score = None
            entry.matched_terms = matched_terms(self.query, entry.key_folded, entry.value_folded)
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
            if connection.vendor == "postgresql":
                ids += self._tail().values_list("pk", flat=True)[:wanted]
            else:
                sql, params = self._tail_sqlite("id")
                with connection.cursor() as cursor:
                    cursor.execute(f"{sql} LIMIT %s", [*params, wanted])
                    ids += [entry_id for (entry_id,) in cursor.fetchall()]
        return ids

    def _tail_sqlite(self, columns: str) -> tuple[str, list[str | int]]:
        return _tail_sqlite(
            self.owner_id,
            self.uid,
            self.filters,
            self.query,
            columns=columns,
            exclude=[candidate.entry_id for candidate in self.candidates],
            many=not self.count_exact,
        )

    def _tail_page(self, offset: int, limit: int) -> "Iterable[MemoryEntry]":
        """limit entries of the tail (the matches past the ranked candidates, newest first) from offset on."""
        if connection.vendor == "postgresql":
            return self._tail()[offset : offset + limit]
        sql, params = self._tail_sqlite("*")
        return MemoryEntry.objects.raw(f"{sql} LIMIT %s OFFSET %s", [*params, limit, offset])

    def shown(self, start: int, stop: int) -> list[ShownResult]:
        """self[start:stop] as a page shows it (ShownResult; a lexical search has no lexical_rank,
        semantic_similarity or relevant: None), the ranked ones read without building their entries."""
        head = self.candidates[start:stop]
        read = shown_by_id_read([candidate.entry_id for candidate in head]) if head else {}
        found: list[ShownResult] = []
        for candidate in head:
            if candidate.entry_id in read:
                values, key_folded, value_folded = read[candidate.entry_id]
                terms = matched_terms(self.query, key_folded, value_folded)
                found.append((*values, candidate.score, terms, None, None, None))
        wanted = stop - start - len(head)
        if wanted > 0 and self.count() > len(self.candidates):
            for entry in self._tail_page(max(0, start - len(self.candidates)), wanted):
                terms = matched_terms(self.query, entry.key_folded, entry.value_folded)
                found.append((*entry_shown_values(entry), None, terms, None, None, None))
        return found

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
        start, stop = slice_bounds(index, "LexicalMatches")
        head = self.candidates[start:stop]
        entries_by_id = entries_by_id_read([candidate.entry_id for candidate in head]) if head else {}
        found: list[MemoryEntry] = []
        for candidate in head:
            entry = entries_by_id.get(candidate.entry_id)
            if entry is not None:
                entry.score = candidate.score
                entry.matched_terms = matched_terms(self.query, entry.key_folded, entry.value_folded)
                found.append(entry)
        wanted = stop - start - len(head)
        if wanted > 0 and self.count() > len(self.candidates):
            tail_start = max(0, start - len(self.candidates))
            for entry in self._tail_page(tail_start, wanted):
                entry.score = None
                entry.matched_terms = matched_terms(self.query, entry.key_folded, entry.value_folded)
                found.append(entry)
        return found
