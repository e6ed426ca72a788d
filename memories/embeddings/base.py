"""The provider protocol, its one error, and the choice of provider from the settings."""

import threading
from typing import Protocol

import numpy as np
from django.conf import settings

from memories.embeddings.queries import QueryCachedProvider


class EmbeddingError(Exception):
    """The provider could not embed: `retryable` says whether trying again later could help."""

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


class EmbeddingProvider(Protocol):
    """Turns texts into vectors.

    `name` says which model made a vector (a vector made by another model is stale); `dimension` is
    the length of every vector. `embed(texts)` answers a float32 array of shape (len(texts),
    dimension) whose rows have length 1, so a dot product is the cosine similarity; `timeout` (seconds)
    bounds a call that leaves the process. It raises EmbeddingError and nothing else. `remote` says
    whether the texts leave the machine: a remote provider is never given a local entry.
    """

    name: str
    remote: bool

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: list[str], *, timeout: float | None = None) -> np.ndarray: ...


def embeddings_remote() -> bool:
    """Whether the configured provider sends texts off the machine (the `openai` one, whatever its URL)."""
    return settings.MEMORYHUB_EMBEDDINGS == "openai"


def entry_text(*, key: str, value: str) -> str:
    """The text embedded for an entry: its key as words, then its value ("food_allergy: peanuts")."""
    return f"{key.replace('_', ' ')}: {value}"


def normalized(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1 as float32; a zero row (no known word) stays zero."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)


_lock = threading.Lock()
_providers: dict[tuple[str, ...], EmbeddingProvider] = {}


def get_provider() -> EmbeddingProvider | None:
    """The configured provider, made once per process and setting (None when embeddings are off), keeping
    the vectors of recent queries (memories.embeddings.queries)."""
    mode = settings.MEMORYHUB_EMBEDDINGS
    if mode == "off":
        return None
    config = (
        mode,
        settings.MEMORYHUB_EMBEDDINGS_URL,
        settings.MEMORYHUB_EMBEDDINGS_KEY,
        settings.MEMORYHUB_EMBEDDINGS_MODEL,
        str(settings.MEMORYHUB_EMBEDDINGS_TIMEOUT),
    )
    with _lock:
        provider = _providers.get(config)
        if provider is None:
            provider = QueryCachedProvider(_make_provider(mode))
            _providers[config] = provider
    return provider


def _make_provider(mode: str) -> EmbeddingProvider:
    if mode == "local":
        from memories.embeddings.local import LocalProvider

        return LocalProvider()
    from memories.embeddings.openai import OpenAIProvider

    return OpenAIProvider(
        url=settings.MEMORYHUB_EMBEDDINGS_URL,
        key=settings.MEMORYHUB_EMBEDDINGS_KEY,
        model=settings.MEMORYHUB_EMBEDDINGS_MODEL,
        timeout=settings.MEMORYHUB_EMBEDDINGS_TIMEOUT,
    )
