"""Hybrid ranking: the lexical and the semantic rankings of one user's entries fused into one.

Reciprocal rank fusion: an entry's score is the sum, over the rankings that found it, of
weight / (RRF_K + its rank there), so an entry both rankings place high comes first, and one only
the meaning finds (no shared word) still gets in. The lexical side is the lexical search's first
LEXICAL_FUSED ranked candidates (memories.search.lexical); the semantic side is the user's
SEMANTIC_CANDIDATES nearest vectors above vectors.MIN_SIMILARITY (cosines about the user's centre,
memories.search.vectors). The constants are tuned on the
recall set's tune split only (docs/RECALL.md says how).

The fused entries come first, best first; the lexical search's other ranked candidates follow in
its order, then every other lexical match newest first, as in the lexical search, so every entry the
words find is still reachable by paging.

The query is embedded in the request. When the provider fails or is slower than
MEMORYHUB_EMBEDDINGS_QUERY_TIMEOUT, the search answers with the lexical ranking alone and says why
(`SearchAnswer.ranking`), and skips the provider for PROVIDER_PAUSE_SECONDS, so later searches
answer at lexical speed instead of each waiting for the timeout. The model runs on one of the process's
QUERY_THREADS threads while the request's own thread ranks by words (the model and the database drivers let
go of the interpreter as they work): only the model and the cosine run there, as Django's database
connections belong to the thread that opened them.
"""

import logging
import math
import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Generic, TypeVar, overload

import numpy as np
from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection
from django.db.models import QuerySet, TextChoices

from memories.embeddings import EmbeddingError, EmbeddingProvider, get_provider
from memories.embeddings.queries import QueryCachedProvider
from memories.models import MemoryEntry
from memories.rows import entries_from_rows, entry_columns, entry_shown_values
from memories.search import vectors
from memories.search.lexical import (
    COUNT_LIMIT,
    STOP_WORDS,
    LexicalMatches,
    LexicalQuery,
    Order,
    ShownResult,
    holds_whole,
    ids_in,
    match_filter,
    matched_terms,
    matches,
    shown_by_id_read,
    slice_bounds,
)

logger = logging.getLogger(__name__)

Held = TypeVar("Held")

# How many of the user's nearest vectors take part in a fusion.
SEMANTIC_CANDIDATES = 20
# How many of the word ranking's candidates take part in it; its others follow the fused entries, in
# its order (deeper, the word ranking's filler pushes the meaning's finds out of the first five).
LEXICAL_FUSED = 5
# Reciprocal rank fusion: an entry at rank r of a ranking adds weight / (RRF_K + r).
RRF_K = 60
LEXICAL_WEIGHT = 1.0
SEMANTIC_WEIGHT = 1.0
# The relevance cut-off (each result's `relevant`): a fused entry passes when both rankings found it (among
# the word ranking's first LEXICAL_FUSED and the nearest by meaning), when it is among those first by words and
# holds every word and phrase of the query (HybridMatches._holding_every_word), or by meaning alone when it is both
# close to the query and stands out: its plain similarity (the cosine of its own vector and the query's, not
# about the user's centre) is at least SEMANTIC_CLOSE, and its similarity stands at least SEMANTIC_STANDOUT
# standard deviations above the mean over all the user's entries (a meaning that stands out from everything
# else the user holds). Standing out alone is not enough: among many entries alike (600 notes "drinks coffee
# number N"), the one that differs stands out for any query, "xyzzy" too. Nothing is hidden by it: a search
# none of whose results passes most likely has no answer. SEMANTIC_CLOSE is on the local model's scale,
# chosen on the recall set's tune split (docs/RECALL.md).
SEMANTIC_STANDOUT = 5.0
SEMANTIC_CLOSE = 0.35
# Among n entries no similarity stands more than sqrt(n - 1) standard deviations above their mean, so a user
# of 25 entries or fewer could never reach SEMANTIC_STANDOUT. A user too few for it (SEMANTIC_STANDOUT_SHARE *
# sqrt(n - 1) below SEMANTIC_STANDOUT: under 71 entries) is asked to stand out that share of the most n
# allows, and, as standing out says less among few, to be closer to the query: SEMANTIC_CLOSE_FEW. Both
# chosen on the tune split with each person's memories cut to 5, 10 and 20 (docs/RECALL.md).
SEMANTIC_STANDOUT_SHARE = 0.6
SEMANTIC_CLOSE_FEW = 0.40
# After a provider failure, searches answer by words alone for this long without asking it again.
PROVIDER_PAUSE_SECONDS = 30.0
# Threads per process that embed queries (and take their cosines) while requests rank by words.
QUERY_THREADS = 2


class Semantic(TextChoices):
    """What the semantic side did for a search."""

    USED = "used", "fused with the lexical ranking"
    OFF = "off", "embeddings are off"
    UNAVAILABLE = "unavailable", "the provider failed or was too slow"


_pause_lock = threading.Lock()
# id of a provider (each made once per process and setting) -> (paused until, why)
_paused: dict[int, tuple[float, str]] = {}


def _pause(provider: EmbeddingProvider, reason: str) -> None:
    with _pause_lock:
        _paused[id(provider)] = (time.monotonic() + PROVIDER_PAUSE_SECONDS, reason)


def _pause_reason(provider: EmbeddingProvider) -> str | None:
    """Why this provider is not asked now, or None when it may be."""
    with _pause_lock:
        until, reason = _paused.get(id(provider), (0.0, ""))
    return reason if time.monotonic() < until else None


def provider_pause_clear() -> None:
    """Ask the providers again at the next search (after the pause that follows a failure)."""
    with _pause_lock:
        _paused.clear()


@dataclass(frozen=True)
class Nearest:
    """The semantic side of one search: the nearest entries (id, similarity) best first, or why there are none."""

    entries: list[tuple[int, float]]
    semantic: Semantic
    reason: str = ""
    # The mean and standard deviation of the similarities of all the user's entries to the query.
    mean: float = 0.0
    spread: float = 0.0
    # The nearest entries' plain similarities (the cosine of their own vectors and the query's), by id.
    plain: dict[int, float] = field(default_factory=dict)
    # How many of the user's entries the mean and spread are taken over.
    rows: int | None = None
    # The ids of the user's entries that have a vector of the model, ascending (None: not known, all are taken to).
    embedded: np.ndarray | None = None


_pool_lock = threading.Lock()
# The process's query threads, and the process they were started in (a forked process starts its own).
_pool: tuple[int, ThreadPoolExecutor] | None = None


def _query_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None or _pool[0] != os.getpid():
            _pool = (os.getpid(), ThreadPoolExecutor(max_workers=QUERY_THREADS, thread_name_prefix="query-embed"))
        return _pool[1]


class _Handover(Generic[Held]):
    """Something one thread hands to another once: taken() waits until it is given, or the giver closes it
    without (then None)."""

    def __init__(self) -> None:
        self._held: Held | None = None
        self._ready = threading.Event()

    def give(self, held: Held) -> None:
        self._held = held
        self._ready.set()

    def close(self) -> None:
        """Let the taker go on, with nothing if nothing was given (the giver failed)."""
        self._ready.set()

    def taken(self) -> Held | None:
        self._ready.wait()
        return self._held


class PendingNearest:
    """The semantic side of one search, under way: result() waits for it (never raises for the provider's
    failures)."""

    def __init__(
        self,
        *,
        done: Nearest | None = None,
        provider: EmbeddingProvider | None = None,
        future: "Future[vectors.NearestVectors | None] | None" = None,
        user_vectors: vectors.UserVectors | None = None,
        limit: int = SEMANTIC_CANDIDATES,
        known: np.ndarray | None = None,
    ) -> None:
        self._done, self._provider, self._future = done, provider, future
        self._user_vectors, self._limit, self._known = user_vectors, limit, known

    @property
    def running(self) -> bool:
        """Whether the model (and the cosine) is at work on another thread."""
        return self._done is None and self._known is None

    def result(self) -> Nearest:
        if self._done is None and self._known is not None:
            assert self._user_vectors is not None
            self._done = self._nearest(vectors.nearest_in(self._user_vectors, self._known, limit=self._limit))
        if self._done is None:
            assert self._future is not None and self._provider is not None
            try:
                compared = self._future.result()
            except EmbeddingError as error:
                logger.warning("search answered by words alone: %s", error)
                _pause(self._provider, str(error))
                self._done = Nearest(entries=[], semantic=Semantic.UNAVAILABLE, reason=str(error))
            else:
                assert compared is not None  # (None only when the vectors' read failed, and this search with it)
                self._done = self._nearest(compared)
        return self._done

    def _nearest(self, compared: vectors.NearestVectors) -> Nearest:
        return Nearest(
            entries=compared.entries,
            semantic=Semantic.USED,
            mean=compared.mean,
            spread=compared.spread,
            plain=compared.plain,
            rows=compared.rows,
            embedded=self._user_vectors.ids if self._user_vectors is not None else None,
        )


def semantic_start(
    *,
    owner: User,
    uid: str,
    query_text: str,
    limit: int = SEMANTIC_CANDIDATES,
    mark: object = vectors.ASK_MARK,
) -> PendingNearest:
    """Start finding the user's entries nearest query_text by meaning: the query is embedded on a query
    thread while the user's vectors are read (or checked) here, on this thread's connection; the cosine
    follows on the query thread. mark: as vectors.user_matrix takes it."""
    provider = get_provider()
    if provider is None:
        return PendingNearest(done=Nearest(entries=[], semantic=Semantic.OFF))
    paused = _pause_reason(provider)
    if paused is not None:
        return PendingNearest(done=Nearest(entries=[], semantic=Semantic.UNAVAILABLE, reason=paused))
    known = provider.kept(query_text) if isinstance(provider, QueryCachedProvider) else None
    if known is not None:
        # Asked before: the query's vector is kept, so there is no model to wait for and no other thread to
        # take part; the cosines are taken on this thread (handing work between threads cost a busy server
        # more CPU than it saved: 0.7 ms of a 5.9 ms search at 20,000 vectors, measured over HTTP).
        (query_vector,) = known
        read = vectors.user_matrix(owner=owner, uid=uid, model=provider.name, mark=mark)
        return PendingNearest(provider=provider, user_vectors=read, limit=limit, known=query_vector)
    timeout = settings.MEMORYHUB_EMBEDDINGS_QUERY_TIMEOUT
    # The model starts at once; the user's vectors are read meanwhile (PostgreSQL's stamp of them is a
    # statement of a few milliseconds at 10,000 entries), then handed over for the cosine.
    user_vectors: _Handover[vectors.UserVectors] = _Handover()

    def compare() -> vectors.NearestVectors | None:
        (query_vector,) = provider.embed([query_text], timeout=timeout)
        held = user_vectors.taken()
        if held is None:
            return None  # the read failed: the search that asked has raised already
        return vectors.nearest_in(held, query_vector, limit=limit)

    future = _query_pool().submit(compare)
    try:
        read = vectors.user_matrix(owner=owner, uid=uid, model=provider.name)
        user_vectors.give(read)
    finally:
        user_vectors.close()
    return PendingNearest(provider=provider, future=future, user_vectors=read, limit=limit)


def semantic_nearest(*, owner: User, uid: str, query_text: str, limit: int = SEMANTIC_CANDIDATES) -> Nearest:
    """The user's entries nearest query_text by meaning; never raises for the provider's failures."""
    return semantic_start(owner=owner, uid=uid, query_text=query_text, limit=limit).result()


def standout_asked(rows: int | None) -> tuple[float, float]:
    """What an entry found by meaning alone must reach to be relevant among a user's `rows` entries (None: many):
    (standard deviations above the mean, plain similarity)."""
    if rows is None:
        return SEMANTIC_STANDOUT, SEMANTIC_CLOSE
    reachable = SEMANTIC_STANDOUT_SHARE * math.sqrt(max(rows - 1, 0))
    if reachable >= SEMANTIC_STANDOUT:
        return SEMANTIC_STANDOUT, SEMANTIC_CLOSE
    return reachable, SEMANTIC_CLOSE_FEW


def fuse(lexical_ids: list[int], semantic: list[tuple[int, float]]) -> dict[int, float]:
    """entry id -> fused score (reciprocal rank fusion of the two rankings, each best first)."""
    scores: dict[int, float] = {}
    for rank, entry_id in enumerate(lexical_ids, start=1):
        scores[entry_id] = scores.get(entry_id, 0.0) + LEXICAL_WEIGHT / (RRF_K + rank)
    for rank, (entry_id, _similarity) in enumerate(semantic, start=1):
        scores[entry_id] = scores.get(entry_id, 0.0) + SEMANTIC_WEIGHT / (RRF_K + rank)
    return scores


@dataclass(frozen=True)
class Ranked:
    """One ranked entry: its fused score (None past the fused ones), what each ranking said of it, and
    whether it passes the relevance cut-off (standout_asked)."""

    entry_id: int
    score: float | None
    lexical_rank: int | None
    lexical_score: float | None
    semantic_similarity: float | None
    relevant: bool = False


def _fused_order(fused: tuple[int, float], similarity: dict[int, float]) -> tuple[float, float, int]:
    """Where a fused entry (id, fused score) goes: the higher score first; of equal scores (the best by words alone
    and the best by meaning alone both score 1 / (RRF_K + 1)), the one found by meaning first, the closer first, then
    the newest. On the recall set at 10,000 entries per user, taking the newest of a tie first had hybrid
    recall@1 0.684 on the shipped questions and 0.703 on the unseen ones; this order 0.740 and 0.838, recall@5
    the same or better (docs/RECALL.md)."""
    entry_id, score = fused
    return (-score, -similarity.get(entry_id, -math.inf), -entry_id)


class FusedOrder:
    """The ranked entries of a search in order, each made a Ranked only when a slice of them is asked for (a
    page shows 50 of up to RANK_CAP + SEMANTIC_CANDIDATES)."""

    def __init__(
        self,
        order: list[tuple[int, float | None]],
        lexical: dict[int, tuple[int, float]],
        similarity: dict[int, float],
        relevant: "Callable[[int | None, float | None, int], bool]",
    ) -> None:
        # (entry id, fused score or None) in order; each id's (lexical rank, score) and similarity, where found.
        self._order, self._lexical, self._similarity, self._relevant = order, lexical, similarity, relevant

    def __len__(self) -> int:
        return len(self._order)

    def ids(self) -> list[int]:
        return [entry_id for entry_id, _ in self._order]

    def semantic_only(self) -> list[int]:
        """The ids only the meaning found."""
        return [entry_id for entry_id, _ in self._order if entry_id not in self._lexical]

    def _ranked(self, entry_id: int, score: float | None) -> Ranked:
        rank, lexical_score = self._lexical.get(entry_id, (None, None))
        similarity = self._similarity.get(entry_id)
        return Ranked(entry_id, score, rank, lexical_score, similarity, self._relevant(rank, similarity, entry_id))

    @overload
    def __getitem__(self, index: int) -> Ranked: ...

    @overload
    def __getitem__(self, index: slice) -> list[Ranked]: ...

    def __getitem__(self, index: int | slice) -> Ranked | list[Ranked]:
        if isinstance(index, slice):
            return [self._ranked(entry_id, score) for entry_id, score in self._order[index]]
        return self._ranked(*self._order[index])

    def __iter__(self) -> Iterator[Ranked]:
        return iter(self[:])


def _matched_terms(query: LexicalQuery, entry: MemoryEntry) -> tuple[str, ...]:
    # As the lexical search names them: the query's words, phrases and typos' variants the folded key or value holds.
    return matched_terms(query, entry.key_folded, entry.value_folded)


ENTRY_TABLE = MemoryEntry._meta.db_table
# The scope of a read of entries by id. On SQLite the unary + keeps the planner on the primary key (it would
# otherwise walk all of the user's (owner, uid, key) index to find a few ids).
BY_ID_SCOPE_SQL = {"sqlite": "+owner_id = %s AND +uid = %s", "postgresql": "owner_id = %s AND uid = %s"}


class HybridMatches:
    """One user's entries for a query, lexical and semantic results fused: the fused entries best first,
    then every other lexical match newest first.

    Sliced and counted like memories.search.LexicalMatches (matches[0:50] is a list of entries, each with
    .score: the fused score, None past the fused entries; .lexical_rank, .lexical_score and
    .semantic_similarity: None where that ranking did not find it; .matched_terms; .relevant: whether it
    passes the relevance cut-off), and order_at(offset) names the order the results from that offset on are in.
    """

    def __init__(
        self,
        *,
        lexical: LexicalMatches,
        nearest: list[tuple[int, float]],
        mean: float = 0.0,
        spread: float = 0.0,
        plain: dict[int, float] | None = None,
        rows: int | None = None,
        embedded: np.ndarray | None = None,
    ) -> None:
        self.lexical = lexical
        self.owner_id, self.uid, self.kind, self.query = lexical.owner_id, lexical.uid, lexical.kind, lexical.query
        # What the lexical side is narrowed to (kind, meta, expiry): the semantic side honours it too.
        self.filters = lexical.filters
        self.nearest = nearest
        self.mean, self.spread = mean, spread
        # The nearest entries' plain similarities by id (an entry without one cannot pass by meaning alone).
        self.plain = plain or {}
        # How many entries the mean and spread are taken over (None: not known, taken to be many).
        self.rows = rows
        self.embedded = embedded
        self._fused: FusedOrder | None = None
        self._count: int | None = None
        # Of the fused ids a page has read (shown), whether each is one of the user's entries the filter lets
        # through: the count asks the same of those found by meaning alone, without reading them again.
        self._read_visible: dict[int, bool] = {}
        # The ids _holding_every_word finds (None: not read yet).
        self._every_word: frozenset[int] | None = None

    @property
    def fused(self) -> "FusedOrder":
        """The ranked entries: the fused ones best first (ties as _fused_order breaks them), then the word
        ranking's other candidates in its order (their score None)."""
        if self._fused is None:
            nearest = self.nearest
            if self.filters.narrows and nearest:
                # The vectors know no kinds or meta: keep the nearest the filter lets through. (Without a
                # kind or meta filter, an expired entry is left out where the page's entries are read.)
                allowed = set(self._visible(pk__in=[entry_id for entry_id, _ in nearest]).values_list("pk", flat=True))
                nearest = [(entry_id, similarity) for entry_id, similarity in nearest if entry_id in allowed]
            candidates = self.lexical.candidates
            scores = fuse([candidate.entry_id for candidate in candidates[:LEXICAL_FUSED]], nearest)
            similarity = dict(nearest)
            best_first = sorted(scores.items(), key=lambda item: _fused_order(item, similarity))
            # The word ranking's candidates past its first LEXICAL_FUSED follow in its order, unfused.
            rest = [(candidate.entry_id, None) for candidate in candidates if candidate.entry_id not in scores]
            lexical = {candidate.entry_id: (rank, candidate.score) for rank, candidate in enumerate(candidates, 1)}
            self._fused = FusedOrder([*best_first, *rest], lexical, similarity, self._relevant)
        return self._fused

    def _relevant(self, lexical_rank: int | None, similarity: float | None, entry_id: int) -> bool:
        among_first_words = lexical_rank is not None and lexical_rank <= LEXICAL_FUSED
        if similarity is None:
            # Among the first by words but not among the nearest by meaning: relevant when it holds every word
            # and phrase of the query ("coffee" among 800 notes on coffee, whose nearest by meaning are others of
            # them), or when it has no vector yet (just written; the worker embeds it in seconds), so the words
            # alone decide.
            if not among_first_words:
                return False
            return not self._has_vector(entry_id) or entry_id in self._holding_every_word()
        return among_first_words or self._close_and_stands_out(entry_id, similarity)

    def _holding_every_word(self) -> frozenset[int]:
        """Of the word ranking's first LEXICAL_FUSED that the meaning did not find, those holding every word and
        phrase of the query as whole words: their folded texts read once, in one statement. A query of stop words
        alone ("the") says nothing by its words: none."""
        if self._every_word is None:
            # Each word with the typos' variants that stand for it ("cofee" is held by an entry holding "coffee").
            asked = [(word, *self.query.variants_of(word)) for word in self.query.words if word not in STOP_WORDS] + [
                (phrase,) for phrase in self.query.phrases
            ]
            nearest = {entry_id for entry_id, _ in self.nearest}
            ids = [candidate.entry_id for candidate in self.lexical.candidates[:LEXICAL_FUSED]]
            ids = [entry_id for entry_id in ids if entry_id not in nearest]
            rows = self._visible_rows("id, key_folded, value_folded", ids) if ids and asked else []
            # As whole words: the words index ranked the entry on whole words, and "ink" in "drinks" answers nothing.
            self._every_word = frozenset(
                entry_id
                for entry_id, key_folded, value_folded in rows
                if all(any(holds_whole(term, key_folded, value_folded) for term in terms) for terms in asked)
            )
        return self._every_word

    def _has_vector(self, entry_id: int) -> bool:
        if self.embedded is None:
            return True
        at = int(np.searchsorted(self.embedded, entry_id))
        return at < len(self.embedded) and int(self.embedded[at]) == entry_id

    def _close_and_stands_out(self, entry_id: int, similarity: float) -> bool:
        standout, close = standout_asked(self.rows)
        plain = self.plain.get(entry_id)
        if plain is None or plain < close:
            return False
        return self.spread > 0 and (similarity - self.mean) / self.spread >= standout

    def _semantic_only(self) -> list[int]:
        return self.fused.semantic_only()

    def count(self) -> int:
        """How many entries it holds, exactly up to COUNT_LIMIT; COUNT_LIMIT + 1 means more."""
        if self._count is None:
            count = self.lexical.count()
            semantic_only = self._semantic_only()
            if count <= COUNT_LIMIT and semantic_only:
                # Found by meaning alone (and not expired), unless the words match them too (further down,
                # newest first): when every match of the words is among the ranked candidates, none of these
                # is. Both read those few entries by id: asked of the user's rows with the ids as one more
                # condition, SQLite read all of them through the (owner, uid) index (7 ms at 20,000).
                visible = self._visible_ids(semantic_only)
                every_match_ranked = count <= len(self.lexical.candidates)
                matched_by_words = (
                    0
                    if every_match_ranked or not visible
                    else MemoryEntry.objects.filter(pk__in=visible)
                    .filter(match_filter(owner_id=self.owner_id, uid=self.uid, query=self.query))
                    .count()
                )
                by_meaning_alone = len(visible) - matched_by_words
                count = min(count + by_meaning_alone, COUNT_LIMIT + 1)
            self._count = count
        return self._count

    @property
    def count_exact(self) -> bool:
        return self.count() <= COUNT_LIMIT

    def __len__(self) -> int:
        return self.count()

    def order_at(self, offset: int) -> Order:
        return Order.RELEVANCE if offset < len(self.fused) else Order.NEWEST

    def _lexical_queryset(self) -> QuerySet[MemoryEntry]:
        return matches(owner_id=self.owner_id, uid=self.uid, kind=None, query=self.query, filters=self.filters)

    def _visible(self, **lookups: object) -> QuerySet[MemoryEntry]:
        """The user's own entries the filter lets through: a vector's id is never trusted to name another's."""
        return MemoryEntry.objects.filter(self.filters.condition(), owner_id=self.owner_id, uid=self.uid, **lookups)

    def _visible_rows(self, columns: str, ids: list[int]) -> list[tuple]:
        """columns of the entries of these ids among the user's own that the filter lets through, read by id in
        one statement of fixed SQL (the filter's compiled once per shape)."""
        filter_sql, filter_params = self.filters.sql()
        condition, ids_params = ids_in(ids)
        scope = BY_ID_SCOPE_SQL[connection.vendor]
        sql = f"SELECT {columns} FROM {ENTRY_TABLE} WHERE {condition} AND {scope}{filter_sql}"
        with connection.cursor() as cursor:
            cursor.execute(sql, [*ids_params, self.owner_id, self.uid, *filter_params])
            return cursor.fetchall()

    def _visible_ids(self, ids: list[int]) -> list[int]:
        """Those of these ids that name the user's own entries the filter lets through (known already of those a
        page has read)."""
        if all(entry_id in self._read_visible for entry_id in ids):
            return [entry_id for entry_id in ids if self._read_visible[entry_id]]
        return [row[0] for row in self._visible_rows("id", ids)]

    def _visible_by_id(self, ids: list[int]) -> dict[int, MemoryEntry]:
        """The entries of these ids among the user's own that the filter lets through, by id: what
        self._visible().in_bulk(ids) reads."""
        return {entry.pk: entry for entry in entries_from_rows(self._visible_rows(entry_columns(ENTRY_TABLE), ids))}

    def queryset(self) -> QuerySet[MemoryEntry]:
        """Every entry it holds, unordered (to sort them otherwise)."""
        return self._lexical_queryset() | self._visible(pk__in=self._semantic_only())

    def _tail(self) -> QuerySet[MemoryEntry]:
        fused_ids = self.fused.ids()
        return self._lexical_queryset().exclude(pk__in=fused_ids).order_by("-updated", "-id")

    def entry_ids(self, limit: int) -> list[int]:
        """The ids of self[0:limit], in order, without reading the entries (for callers that read
        only a few of their columns). The fused ids are the user's own vectors' and candidates'."""
        ids = self.fused.ids()[:limit]
        wanted = limit - len(ids)
        if wanted > 0 and self.lexical.count() > len(self.lexical.candidates):
            ids += self._tail().values_list("pk", flat=True)[:wanted]
        return ids

    def judged_ids(self, limit: int) -> list[tuple[int, bool]]:
        """entry_ids(limit), each with whether it passes the relevance cut-off (the entry's .relevant; the
        word matches past the ranked ones do not)."""
        judged = [(fused.entry_id, fused.relevant) for fused in self.fused[:limit]]
        return judged + [(entry_id, False) for entry_id in self.entry_ids(limit)[len(judged) :]]

    def _unranked(self, entry: MemoryEntry) -> MemoryEntry:
        entry.score = entry.lexical_rank = entry.lexical_score = entry.semantic_similarity = None
        entry.matched_terms = _matched_terms(self.query, entry)
        entry.relevant = False
        return entry

    def shown(self, start: int, stop: int) -> list[ShownResult]:
        """self[start:stop] as a page shows it (ShownResult), the fused ones read without building their entries."""
        head = self.fused[start:stop]
        found: list[ShownResult] = []
        if head:
            filter_sql, filter_params = self.filters.sql()
            # The user's own rows the filter lets through only (an expired entry's vector is still cached).
            read = shown_by_id_read(
                [fused.entry_id for fused in head],
                f" AND {BY_ID_SCOPE_SQL[connection.vendor]}{filter_sql}",
                [self.owner_id, self.uid, *filter_params],
            )
            self._read_visible.update((fused.entry_id, fused.entry_id in read) for fused in head)
            for fused in head:
                if fused.entry_id in read:
                    values, key_folded, value_folded = read[fused.entry_id]
                    terms = matched_terms(self.query, key_folded, value_folded)
                    similarity = fused.semantic_similarity
                    found.append((*values, fused.score, terms, fused.lexical_rank, similarity, fused.relevant))
        wanted = stop - start - len(head)
        if wanted > 0 and self.lexical.count() > len(self.lexical.candidates):
            tail_start = max(0, start - len(self.fused))
            for entry in self._tail()[tail_start : tail_start + wanted]:
                found.append((*entry_shown_values(entry), None, _matched_terms(self.query, entry), None, None, False))
        return found

    def __iter__(self) -> Iterator[MemoryEntry]:
        """Every entry: the fused ones, then the other lexical matches newest first."""
        yield from self[0 : len(self.fused)]
        for entry in self._tail():
            yield self._unranked(entry)

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
        start, stop = slice_bounds(index, "HybridMatches")
        head = self.fused[start:stop]
        # The user's own rows the filter lets through only (an expired entry's vector is still cached).
        entries_by_id = self._visible_by_id([fused.entry_id for fused in head]) if head else {}
        found: list[MemoryEntry] = []
        for fused in head:
            entry = entries_by_id.get(fused.entry_id)
            if entry is not None:
                entry.score, entry.lexical_rank = fused.score, fused.lexical_rank
                entry.lexical_score, entry.semantic_similarity = fused.lexical_score, fused.semantic_similarity
                entry.relevant = fused.relevant
                entry.matched_terms = _matched_terms(self.query, entry)
                found.append(entry)
        wanted = stop - start - len(head)
        if wanted > 0 and self.lexical.count() > len(self.lexical.candidates):
            # Word matches the words index did not rank (held as substrings), so none of them is fused yet.
            tail_start = max(0, start - len(self.fused))
            found += [self._unranked(entry) for entry in self._tail()[tail_start : tail_start + wanted]]
        return found


# What a ranked search answers: the lexical matches alone, or fused with the nearest by meaning.
RankedMatches = LexicalMatches | HybridMatches


@dataclass(frozen=True)
class ShownMatches:
    """A ranked search's results as a page shows them: sliced like the matches (each result a ShownResult, what
    SearchResultSerializer shows of it, without building the entries), counted and ordered as they are."""

    matches: RankedMatches

    def __getitem__(self, index: slice) -> list[ShownResult]:
        start, stop = slice_bounds(index, "ShownMatches")
        return self.matches.shown(start, stop)

    def count(self) -> int:
        return self.matches.count()

    def order_at(self, offset: int) -> Order:
        return self.matches.order_at(offset)


@dataclass(frozen=True)
class SearchAnswer:
    """A search's entries, and whether the semantic side took part (and why not)."""

    entries: "RankedMatches | QuerySet[MemoryEntry]"
    semantic: Semantic
    reason: str = ""

    @property
    def ranking(self) -> str:
        """The API's X-MemoryHub-Ranking: hybrid, or "lexical; semantic off" / "lexical; semantic unavailable: why"."""
        if self.semantic == Semantic.USED:
            return "hybrid"
        return f"lexical; semantic {self.semantic.value}" + (f": {self.reason}" if self.reason else "")


def hybrid_search(*, owner: User, lexical: LexicalMatches, query_text: str) -> SearchAnswer:
    """The lexical matches fused with the user's entries nearest query_text by meaning.

    With embeddings off, or the provider failing, the answer is the lexical matches as they are. With
    no vector near enough, the fused order is the lexical one (each entry with its fused score).
    """
    mark = vectors.ASK_MARK
    provider = get_provider()
    if (
        connection.vendor == "postgresql"
        and isinstance(provider, QueryCachedProvider)
        and provider.kept(query_text) is not None
    ):
        # No model to wait for: the words are ranked first, and the mark their statement read beside the
        # candidates tells whether the user's vectors may have changed (a round trip less).
        lexical.candidates  # noqa: B018
        mark = lexical.mark
    pending = semantic_start(owner=owner, uid=lexical.uid, query_text=query_text, mark=mark)
    if pending.running:
        # The words' ranking, on this thread and its connection, while the query is embedded on another.
        lexical.candidates  # noqa: B018
    nearest = pending.result()
    if nearest.semantic != Semantic.USED:
        return SearchAnswer(entries=lexical, semantic=nearest.semantic, reason=nearest.reason)
    entries = HybridMatches(
        lexical=lexical,
        nearest=nearest.entries,
        mean=nearest.mean,
        spread=nearest.spread,
        plain=nearest.plain,
        rows=nearest.rows,
        embedded=nearest.embedded,
    )
    return SearchAnswer(entries=entries, semantic=Semantic.USED)
