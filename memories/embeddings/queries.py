"""The vectors of recent queries, kept per provider: a search embeds one text, its query, and an agent that asks
for its context each turn with the user's message, or repeats a recall, asks with the same text again.

A provider's model gives the same vector for the same text, so the last QUERY_CACHE_SIZE texts embedded one at
a time are answered from memory (a few hundred kilobytes). Batches (the worker embedding entries) pass
straight through; a failure is never kept.
"""

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from memories.embeddings.base import EmbeddingProvider

# How many single texts (queries) a provider keeps the vector of, the most recently asked ones.
QUERY_CACHE_SIZE = 256


class QueryCachedProvider:
    """An EmbeddingProvider that keeps the vectors of the last QUERY_CACHE_SIZE texts embedded one at a time.

    get_provider() answers one of these around the configured provider (`provider`): its name, remote and
    dimension are the provider's. A kept vector is read-only.
    """

    def __init__(self, provider: "EmbeddingProvider", *, size: int = QUERY_CACHE_SIZE) -> None:
        self.provider = provider
        self.name = provider.name
        self.remote = provider.remote
        self.size = size
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def dimension(self) -> int:
        return self.provider.dimension

    def embed(self, texts: list[str], *, timeout: float | None = None) -> np.ndarray:
        if len(texts) != 1:
            return self.provider.embed(texts, timeout=timeout)
        (text,) = texts
        with self._lock:
            kept = self._vectors.get(text)
            if kept is not None:
                self._vectors.move_to_end(text)
                return kept
        vectors = self.provider.embed(texts, timeout=timeout)
        vectors.setflags(write=False)
        with self._lock:
            self._vectors[text] = vectors
            while len(self._vectors) > self.size:
                self._vectors.popitem(last=False)
        return vectors

    def kept(self, text: str) -> np.ndarray | None:
        """The vector of text (of shape (1, dimension)) when it is kept, without asking the provider; else None."""
        with self._lock:
            kept = self._vectors.get(text)
            if kept is not None:
                self._vectors.move_to_end(text)
            return kept

    def queries_kept(self) -> int:
        """How many query vectors it holds now."""
        with self._lock:
            return len(self._vectors)

    def queries_clear(self) -> None:
        """Forget every kept vector (the next embed of each text asks the provider)."""
        with self._lock:
            self._vectors.clear()
