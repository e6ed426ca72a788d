"""Semantic search: exact cosine similarity over one user's vectors, in numpy.

The vectors of one (account, uid, model) are read from their index as float32 BLOBs and kept in a
small per-process cache, checked on every search with one aggregate query (the count and the
latest embedding time of that user's vectors), so a search at 10,000 entries reads 10 MB only when
the user's vectors changed. Works on every database (SQLite without extensions, PostgreSQL without
pgvector). Nothing from another account or user is ever read.
"""

import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
from django.contrib.auth.models import User
from django.db.models import Count, Max

from memories.embeddings.store import user_vectors
from memories.models import EntryEmbedding

# The users whose vectors a process keeps (each up to its entry count x dimension x 4 bytes).
CACHED_USERS = 8
# Cosine similarity under which a vector is not a semantic match at all (tuned on the recall set's
# tune split; see docs/RECALL.md).
MIN_SIMILARITY = 0.25


@dataclass(frozen=True)
class _Cached:
    stamp: tuple
    ids: np.ndarray
    matrix: np.ndarray


_cache: OrderedDict[tuple, _Cached] = OrderedDict()
_lock = threading.Lock()


def _vectors(*, owner: User, uid: str, model: str) -> tuple[np.ndarray, np.ndarray]:
    stamp_row = EntryEmbedding.objects.filter(owner=owner, uid=uid, model=model, vector__isnull=False).aggregate(
        count=Count("entry_id"), latest=Max("embedded_at")
    )
    stamp = (stamp_row["count"], stamp_row["latest"])
    key = (owner.pk, uid, model)
    with _lock:
        cached = _cache.get(key)
        if cached is not None and cached.stamp == stamp:
            _cache.move_to_end(key)
            return cached.ids, cached.matrix
    ids, matrix = user_vectors(owner=owner, uid=uid, model=model)
    with _lock:
        _cache[key] = _Cached(stamp, ids, matrix)
        _cache.move_to_end(key)
        while len(_cache) > CACHED_USERS:
            _cache.popitem(last=False)
    return ids, matrix


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
    ids, matrix = _vectors(owner=owner, uid=uid, model=model)
    if not len(ids) or matrix.shape[1] != len(query_vector):
        return []
    scores = matrix @ query_vector.astype(np.float32)
    top = np.argpartition(-scores, limit)[:limit] if limit < len(scores) else np.arange(len(scores))
    top = top[np.argsort(-scores[top], kind="stable")]
    return [(int(ids[index]), float(scores[index])) for index in top if scores[index] >= min_similarity]
