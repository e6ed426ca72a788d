"""Semantic search: the nearest of one user's vectors by cosine similarity, exactly, in numpy and simsimd.

The vectors of one (account, uid, model) are read from their index as float32 BLOBs and kept in a
per-process cache (at most 64 MB), checked on every search with one aggregate query (the count and the
latest embedding time of that user's vectors), so a search at 10,000 entries reads 10 MB only when
the user's vectors changed. Works on every database (SQLite without extensions, PostgreSQL without
pgvector). Nothing from another account or user is ever read.

The aggregate (3 ms at 10,000 vectors on SQLite) is asked only when the database may have changed since it
was last asked (memories.search.marks: on SQLite one pragma, on PostgreSQL the current snapshot; neither reads
a table).

The search is in two steps, so the query can be embedded meanwhile: `user_matrix` reads (or checks) the
vectors on the request's thread and connection; `nearest_in` is numpy alone, on any thread.

A search does not read every row's 384 floats: at 20,000 entries that is 30 MB, and 2.5 ms of a 5 ms search
on a busy server. Each row is also kept coarse, as bytes (int8, one scale per row: a quarter of the size),
and the coarse rows are compared with the coarse query first (SIMD integer dot products, simsimd). What a
coarse similarity may be off by is known row by row (coarse_similarities: |exact - coarse| <= |s a| |f| +
|e| |q|, e the row's rounding error, f the query's), so the rows that might be among the nearest are known
exactly: those whose best case reaches the worst case of the `limit`-th best. Only those (a hundred or a few hundred of
20,000) are compared in float32, and they are ranked as a scan of every row ranks them: the nearest are the
same entries, with the same similarities. The mean and spread of all the similarities come from the rows'
mean and covariance (Moments), without the similarities themselves. A user of few rows for their dimension
(under COARSE_ROWS_PER_DIMENSION per dimension) has every similarity taken in float32, which costs less.

Similarities are taken about the user's own centre: the mean of the user's vectors is taken away from
each entry's vector and from the query's (each scaled to length 1 again) before the cosine. Entries
written alike (a user's thousands of notes, tasks and bookings) share a direction that makes each of
them look a little like any query and crowds the nearest; about their centre they are told apart by
what each says. The mean is weighed by n / (n + CENTRE_PRIOR) for a user of n vectors, so a user with
few entries keeps nearly plain cosines (with one entry, centring fully would leave nothing to compare).

The nearest are ranked by similarity less each entry's crowding: half the mean of its CROWDING_NEIGHBOURS
highest similarities to the user's other entries (cross-domain similarity local scaling, CSLS), weighed like
the centre. An entry with many look-alikes (the same note written for a hundred days) is near every query a
little and crowds out the one memory that answers; one that says something nothing else says is not
penalised. The similarity itself is what a result shows and what MIN_SIMILARITY holds to. The neighbours are
sought among at most CROWDING_REFERENCES of the user's entries (spread evenly over them in the order of
their ids), so building a user's rows costs about 5 ms per 1,000 vectors once, when they change, and
nothing per query.

Each row also keeps its length about the centre, so the entry's own vector (row * length + centre) is known
again for the few nearest: their plain similarity, the cosine of the entry's and the query's own vectors,
says how close each is to the query in absolute terms. Centring makes an entry unlike the user's others (one
note among hundreds alike) look near any query far from the centre, "xyzzy" as much as a real question: the
plain similarity does not (the relevance cut-off, memories.search.hybrid, asks for both).
"""

import math
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import simsimd
from django.contrib.auth.models import User
from django.db import connection

from memories.embeddings.base import normalized
from memories.embeddings.store import user_vectors
from memories.models import EntryEmbedding
from memories.search.marks import Mark, database_mark

# The vectors a process keeps, in bytes, over all users (10,000 entries of 256 dimensions: 10 MB).
CACHE_MAX_BYTES = 64 * 1024 * 1024
# Cosine similarity about the user's centre under which a vector is not a semantic match at all (tuned
# on the recall set's tune split; see docs/RECALL.md).
MIN_SIMILARITY = 0.15
# The user's mean vector is taken away weighed by n / (n + CENTRE_PRIOR) for n vectors.
CENTRE_PRIOR = 20
# Crowding (CSLS): an entry's nearest this many other entries, among at most CROWDING_REFERENCES of the user's,
# and the share of their mean similarity taken from its own (weighed by n / (n + CENTRE_PRIOR) too). Chosen
# on the recall set's tune split (docs/RECALL.md).
CROWDING_NEIGHBOURS = 3
CROWDING_REFERENCES = 1024
CROWDING_WEIGHT = 0.5
# Rows whose crowding is computed at once (a block of 2,048 x 1,024 similarities: 8 MB).
CROWDING_BLOCK_ROWS = 2048
# The coarse rows' values: each row's element of largest size is +-COARSE_PEAK.
COARSE_PEAK = 127
# Added to the coarse similarities' bound for float32's rounding in the exact ones, which is at most d * 2**-24
# of the sum of |products| (at most 1): 2.3e-5 at 384 dimensions. Past 3,000 dimensions, twice that is added.
ROUNDING_SLACK = 1e-4
# A user of fewer rows than this many times their dimension (1,536 at 384) is compared row by row in float32,
# without the coarse pass: their every similarity costs less than the rows' covariance (d x d) per search.
COARSE_ROWS_PER_DIMENSION = 4


# The cache's check: read from the (owner, uid, model, embedded_at) index alone. Rows of a model
# always hold a vector (a row gets its model with its first vector). Written in SQL: the ORM's
# version of this statement took 10 ms on SQLite where this one takes 0.3 ms.
_TABLE = EntryEmbedding._meta.db_table
STAMP_SQL = f"SELECT count(*), max(embedded_at) FROM {_TABLE} WHERE owner_id = %s AND uid = %s AND model = %s"


@dataclass(frozen=True)
class Moments:
    """The rows' mean and covariance: the mean and spread of their similarities to any query, without them."""

    mean: np.ndarray
    covariance: np.ndarray

    def spread_of(self, query: np.ndarray) -> tuple[float, float]:
        """The mean and standard deviation of the rows' similarities to query: m.q and sqrt(q C q)."""
        query = np.asarray(query, dtype=np.float32)
        # einsum, not BLAS (as similarities).
        spread = float(np.einsum("ij,j->i", self.covariance, query) @ query)
        return float(self.mean @ query), math.sqrt(max(spread, 0.0))


def moments_of(matrix: np.ndarray) -> Moments:
    """The rows' mean and covariance, in float32 (a search reads the 384 x 384 of them: 0.6 MB, not 1.2)."""
    mean = matrix.mean(axis=0, dtype=np.float64).astype(np.float32)
    about_mean = matrix - mean
    return Moments(mean=mean, covariance=(about_mean.T @ about_mean) / np.float32(len(matrix)))


@dataclass(frozen=True)
class Coarse:
    """What a search of many rows reads instead of every row: the rows kept as bytes (each row is about
    scales * rows, of length lengths, off by errors: the length of the difference), and the rows' moments."""

    rows: np.ndarray
    scales: np.ndarray
    lengths: np.ndarray
    errors: np.ndarray
    moments: Moments

    @property
    def nbytes(self) -> int:
        parts = (self.rows, self.scales, self.lengths, self.errors, self.moments.mean, self.moments.covariance)
        return sum(part.nbytes for part in parts)


def coarse_of(matrix: np.ndarray) -> Coarse:
    """The rows as int8, each scaled so its element of largest size is +-COARSE_PEAK (a zero row stays zero),
    with the scale and the length of what each lost; and the rows' moments."""
    # In float32 (the rows' own type): what it rounds off is a few 1e-8, well inside ROUNDING_SLACK.
    rows = np.asarray(matrix, dtype=np.float32)
    peaks = np.abs(rows).max(axis=1) if rows.size else np.zeros(len(rows), dtype=np.float32)
    scales = np.where(peaks > 0, peaks / np.float32(COARSE_PEAK), np.float32(1.0)).astype(np.float32)
    scaled = rows / scales[:, None]
    coarse = np.rint(scaled, out=scaled).astype(np.int8)
    kept = scales[:, None] * coarse
    lengths = np.linalg.norm(kept, axis=1)
    errors = np.linalg.norm(rows - kept, axis=1)
    return Coarse(rows=coarse, scales=scales, lengths=lengths, errors=errors, moments=moments_of(matrix))


def coarse_similarities(coarse: Coarse, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's similarity with query as the coarse rows and the coarse query give it, and how far it may be
    from the exact one: for row r = s a + e and query q = t b + f, r.q - s t a.b is s a.f + e.q, at most
    |s a| |f| + |e| |q| in size. In float32: the dot products of up to 1,040 dimensions are whole numbers it
    holds exactly, and what the rest rounds off is a few 1e-7, inside the slack."""
    query = np.asarray(query, dtype=np.float32)
    peak = float(np.abs(query).max()) if query.size else 0.0
    scale = peak / COARSE_PEAK if peak > 0 else 1.0
    coarse_query = np.rint(query / np.float32(scale)).astype(np.int8)
    lost = float(np.linalg.norm(query.astype(np.float64) - scale * coarse_query))
    dots = np.asarray(simsimd.cdist(coarse_query[None, :], coarse.rows, metric="dot", out_dtype="float32"))[0]
    similarity = np.multiply(dots, coarse.scales)
    similarity *= np.float32(scale)
    bound = coarse.lengths * np.float32(lost)
    bound += coarse.errors * np.float32(np.linalg.norm(query.astype(np.float64)))
    bound += np.float32(max(ROUNDING_SLACK, 2 * len(query) * 2.0**-24))
    return similarity, bound


@dataclass(frozen=True)
class UserVectors:
    """One user's vectors of one model, as a search compares them with a query."""

    # The entries' ids, one per row, ascending.
    ids: np.ndarray
    # The vectors about the user's centre, each of length 1, and that centre.
    matrix: np.ndarray
    centre: np.ndarray
    # What each row's similarity loses in the ranking (crowding_of, weighed): as long as ids.
    crowding: np.ndarray
    # Each row's length about the centre before it was scaled to 1 (row * length + centre is the entry's own
    # vector): as long as ids.
    lengths: np.ndarray
    # The matrix as bytes (what the search compares first), with its rows' mean and covariance; None for a user of
    # fewer than COARSE_ROWS_PER_DIMENSION rows per dimension, whose rows are compared one by one.
    coarse: Coarse | None = None

    @property
    def nbytes(self) -> int:
        """What the process keeps for them, in bytes."""
        kept = sum(part.nbytes for part in (self.ids, self.matrix, self.centre, self.crowding, self.lengths))
        return kept + (self.coarse.nbytes if self.coarse is not None else 0)


@dataclass(frozen=True)
class _Cached:
    stamp: tuple
    vectors: UserVectors


def _weight(rows: int) -> float:
    """How much of the user's centre, and of the crowding, a user of this many vectors is given."""
    return rows / (rows + CENTRE_PRIOR)


def centred(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows taken about their weighed mean (CENTRE_PRIOR) and scaled to length 1, and that mean."""
    if not len(matrix):
        return matrix, np.zeros(matrix.shape[1], dtype=np.float32)
    centre = (matrix.mean(axis=0) * _weight(len(matrix))).astype(np.float32)
    return normalized(matrix - centre), centre


def crowding_references(rows: int) -> np.ndarray:
    """The positions of the reference rows: every row up to CROWDING_REFERENCES, else that many spread evenly
    from the first to the last (so their number does not swing as a user grows)."""
    if rows <= CROWDING_REFERENCES:
        return np.arange(rows)
    return np.unique(np.linspace(0, rows - 1, CROWDING_REFERENCES).round().astype(np.int64))


def crowding_of(matrix: np.ndarray) -> np.ndarray:
    """For each row (of length 1), the mean of its CROWDING_NEIGHBOURS highest similarities to the other rows
    among the references (crowding_references); 0 for a user with too few rows to have that many neighbours.
    Each row's is computed alone (block by block), the same for the same rows in the same order."""
    rows = len(matrix)
    crowding = np.zeros(rows, dtype=np.float32)
    if rows <= CROWDING_NEIGHBOURS:
        return crowding
    positions = crowding_references(rows)
    references = np.ascontiguousarray(matrix[positions].T)
    kth = len(positions) - CROWDING_NEIGHBOURS
    for start in range(0, rows, CROWDING_BLOCK_ROWS):
        block = matrix[start : start + CROWDING_BLOCK_ROWS] @ references
        # A row that is a reference is not its own neighbour.
        own = (positions >= start) & (positions < start + len(block))
        block[positions[own] - start, np.flatnonzero(own)] = -np.inf
        crowding[start : start + len(block)] = np.partition(block, kth, axis=1)[:, kth:].mean(axis=1)
    return crowding


_cache: OrderedDict[tuple, _Cached] = OrderedDict()
_lock = threading.Lock()


# The last answers to STAMP_SQL, per (account, uid, model), with the database's mark when each was asked.
@dataclass(frozen=True)
class _Asked:
    mark: Mark
    stamp: tuple


# How many users' stamps are kept with their marks (each a few hundred bytes), the least recently asked
# forgotten first.
STAMPS_KEPT = 1024
_asked: OrderedDict[tuple, _Asked] = OrderedDict()


# user_matrix's mark when the caller has none: read one.
ASK_MARK = object()


def _stamp(*, owner: User, uid: str, model: str, mark: object = ASK_MARK) -> tuple:
    """STAMP_SQL's answer for the user's vectors, as the database holds them now; mark, when given, is the
    database's mark read just before by the caller (None: there is none)."""
    key = (owner.pk, uid, model)
    # Taken before the aggregate: a commit between the two moves the mark the next search sees.
    if mark is ASK_MARK:
        mark = database_mark()
    assert mark is None or isinstance(mark, Mark)
    if mark is not None:
        with _lock:
            asked = _asked.get(key)
            if asked is not None and mark.same(asked.mark):
                _asked.move_to_end(key)
                return asked.stamp
    with connection.cursor() as cursor:
        cursor.execute(STAMP_SQL, [owner.pk, uid, model])
        stamp = tuple(cursor.fetchone())
    if mark is not None:
        with _lock:
            _asked[key] = _Asked(mark, stamp)
            _asked.move_to_end(key)
            while len(_asked) > STAMPS_KEPT:
                _asked.popitem(last=False)
    return stamp


def user_vectors_about_centre(ids: np.ndarray, matrix: np.ndarray) -> UserVectors:
    """A user's vectors (one row per id) as a search compares them: in the order of their ids (whatever order
    the database read them in, so every process picks the same references), about their centre, with their
    crowding."""
    order = np.argsort(ids, kind="stable")
    ids, own = ids[order], matrix[order]
    matrix, centre = centred(own)
    lengths = np.linalg.norm(own - centre, axis=1).astype(np.float32)
    crowding = crowding_of(matrix) * np.float32(CROWDING_WEIGHT * _weight(len(matrix)))
    read = UserVectors(ids=ids, matrix=matrix, centre=centre, crowding=crowding, lengths=lengths)
    if not len(matrix) or len(matrix) < COARSE_ROWS_PER_DIMENSION * matrix.shape[1]:
        return read
    return replace(read, coarse=coarse_of(matrix))


def user_matrix(*, owner: User, uid: str, model: str, mark: object = ASK_MARK) -> UserVectors:
    """The user's vectors of `model` about the user's centre, with their crowding (user_vectors_about_centre),
    from the cache while they hold still. mark: the database's mark, when the caller read one just before on
    this thread's connection (a search's ranking statement reads it beside its candidates), so it is not read
    again."""
    stamp = _stamp(owner=owner, uid=uid, model=model, mark=mark)
    key = (owner.pk, uid, model)
    with _lock:
        cached = _cache.get(key)
        if cached is not None and cached.stamp == stamp:
            _cache.move_to_end(key)
            return cached.vectors
    read = user_vectors_about_centre(*user_vectors(owner=owner, uid=uid, model=model))
    with _lock:
        _cache[key] = _Cached(stamp, read)
        _cache.move_to_end(key)
        while len(_cache) > 1 and sum(cached.vectors.nbytes for cached in _cache.values()) > CACHE_MAX_BYTES:
            _cache.popitem(last=False)
    return read


def vectors_cache_clear() -> None:
    """Forget every user's cached vectors (the next search of each reads them from the database)."""
    with _lock:
        _cache.clear()
        _asked.clear()


@dataclass(frozen=True)
class NearestVectors:
    """The user's nearest entries (id, cosine similarity) best first, how the similarities of all the
    user's entries to the query spread (their mean and standard deviation), and each nearest entry's plain
    similarity (plain_similarities) by id."""

    entries: list[tuple[int, float]]
    mean: float = 0.0
    spread: float = 0.0
    plain: dict[int, float] = field(default_factory=dict)
    # How many of the user's entries the mean and spread are taken over.
    rows: int = 0


def query_about(centre: np.ndarray, query_vector: np.ndarray) -> np.ndarray:
    """The query's vector about the user's centre, of length 1 (what the user's rows are compared with)."""
    (query,) = normalized(query_vector.astype(np.float32)[None, :] - centre)
    return query


def similarities(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """The cosine of each row of matrix with query (both about the user's centre). Each row's is computed
    alone, so the rows may be taken in parts, on several threads, with the same result to the last bit."""
    # einsum, not BLAS: on a busy machine BLAS's threads cost 20 times the product itself.
    return np.einsum("ij,j->i", matrix, query)


def ranked_of(
    ids: np.ndarray,
    scores: np.ndarray,
    *,
    limit: int,
    min_similarity: float = MIN_SIMILARITY,
    crowding: np.ndarray | None = None,
) -> list[tuple[int, float]]:
    """The `limit` entries whose similarity (scores) is at least min_similarity, best first by similarity less
    crowding (none: by similarity), each with its similarity; of equals, the first in ids' order first (so the
    same rows rank alike whichever others are compared with them)."""
    if limit <= 0:
        return []
    falling = -np.where(scores >= min_similarity, scores if crowding is None else scores - crowding, -np.inf)
    top = np.arange(len(falling))
    if limit < len(falling):
        top = np.flatnonzero(falling <= np.partition(falling, limit - 1)[limit - 1])
    top = top[np.argsort(falling[top], kind="stable")][:limit]
    return [(int(ids[index]), float(scores[index])) for index in top if scores[index] >= min_similarity]


def candidates_of(
    coarse: Coarse, crowding: np.ndarray, query: np.ndarray, *, limit: int, min_similarity: float
) -> np.ndarray:
    """The positions of the rows that may be among the `limit` nearest query (about the centre) as ranked_of
    ranks them, from their coarse similarities: every row but those that cannot reach min_similarity, or whose
    best case (similarity less crowding) is below the `limit`-th best worst case of the rows sure to reach it."""
    similarity, bound = coarse_similarities(coarse, query)
    highest = similarity + bound
    possible = highest >= min_similarity
    lowest = np.subtract(similarity, bound, out=similarity)
    sure = lowest >= min_similarity
    sure_count = int(np.count_nonzero(sure))
    if 0 < limit <= sure_count:
        worst = lowest[sure] - crowding[sure]
        kept = np.partition(worst, sure_count - limit)[sure_count - limit]
        highest -= crowding
        possible &= highest >= kept
    return np.flatnonzero(possible)


def plain_similarities(read: UserVectors, query_vector: np.ndarray, entry_ids: Sequence[int]) -> list[float]:
    """The cosine of each of these entries' own vectors (not about the user's centre) with the query's own:
    how close each is to the query in absolute terms. The ids are of the user's rows (read.ids)."""
    if not entry_ids:
        return []
    rows = np.searchsorted(read.ids, np.asarray(entry_ids, dtype=np.int64))
    own = read.matrix[rows] * read.lengths[rows, None] + read.centre
    (query,) = normalized(query_vector.astype(np.float32)[None, :])
    return [float(similarity) for similarity in similarities(normalized(own), query)]


def comparable(matrix: np.ndarray, query_vector: np.ndarray) -> bool:
    """Whether the user has vectors, of the query's dimension."""
    return bool(len(matrix)) and matrix.shape[1] == len(query_vector)


def nearest_in(
    read: UserVectors, query_vector: np.ndarray, *, limit: int, min_similarity: float = MIN_SIMILARITY
) -> NearestVectors:
    """The `limit` of the user's rows (as user_matrix gives them) nearest query_vector above min_similarity, best
    first by similarity less crowding (ranked_of, over the rows candidates_of leaves: the same as over them
    all), with the mean and spread of all the similarities and the nearest's plain similarities: numpy alone
    (no database), so it may run on any thread."""
    if not comparable(read.matrix, query_vector):
        return NearestVectors(entries=[])
    query = query_about(read.centre, query_vector)
    if read.coarse is None:
        scores = similarities(read.matrix, query)
        entries = ranked_of(read.ids, scores, limit=limit, min_similarity=min_similarity, crowding=read.crowding)
        mean, spread = float(scores.mean()), float(scores.std())
    else:
        rows = candidates_of(read.coarse, read.crowding, query, limit=limit, min_similarity=min_similarity)
        entries = ranked_of(
            read.ids[rows],
            similarities(read.matrix[rows], query),
            limit=limit,
            min_similarity=min_similarity,
            crowding=read.crowding[rows],
        )
        mean, spread = read.coarse.moments.spread_of(query)
    ids = [entry_id for entry_id, _ in entries]
    plain = dict(zip(ids, plain_similarities(read, query_vector, ids), strict=True))
    return NearestVectors(entries=entries, mean=mean, spread=spread, plain=plain, rows=len(read.ids))


def semantic_nearest_vectors(
    *,
    owner: User,
    uid: str,
    model: str,
    query_vector: np.ndarray,
    limit: int,
    min_similarity: float = MIN_SIMILARITY,
) -> NearestVectors:
    """The user's `limit` nearest entries above min_similarity (cosines about the user's centre), with the
    spread of all the user's similarities."""
    read = user_matrix(owner=owner, uid=uid, model=model)
    return nearest_in(read, query_vector, limit=limit, min_similarity=min_similarity)


def semantic_ranked(
    *,
    owner: User,
    uid: str,
    model: str,
    query_vector: np.ndarray,
    limit: int,
    min_similarity: float = MIN_SIMILARITY,
) -> list[tuple[int, float]]:
    """(entry id, cosine similarity) of the user's `limit` nearest entries, best first, above min_similarity."""
    return semantic_nearest_vectors(
        owner=owner, uid=uid, model=model, query_vector=query_vector, limit=limit, min_similarity=min_similarity
    ).entries
