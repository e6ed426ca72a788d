"""The openai provider: any OpenAI-compatible embeddings endpoint (OpenAI, Ollama, llama.cpp, vLLM).

Shared entries and queries are sent to that endpoint; local entries never are (memories.embeddings.store).
One POST per batch, with a timeout; every failure becomes an EmbeddingError that says whether a retry
could help.
"""

import httpx
import numpy as np

from memories.embeddings.base import EmbeddingError, normalized

# Statuses after which the same request may succeed later.
RETRYABLE_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
ERROR_BODY_CHARS = 200


def embeddings_url(base_url: str) -> str:
    """The embeddings path under a base URL given with or without /v1 (or already ending in /embeddings)."""
    base = base_url.rstrip("/")
    if base.endswith("/embeddings"):
        return base
    if base.endswith("/v1"):
        return f"{base}/embeddings"
    return f"{base}/v1/embeddings"


class OpenAIProvider:
    """POSTs `{"model": ..., "input": [...]}` and reads `data[i].embedding` back, in input order.

    Remote whatever its URL (even one on this machine): the hub never gives it a local entry.
    """

    remote = True

    def __init__(self, *, url: str, key: str, model: str, timeout: float) -> None:
        self.url = embeddings_url(url)
        self.name = f"openai:{model}"
        self.model = model
        self.timeout = timeout
        headers = {"Content-Type": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        self._client = httpx.Client(headers=headers, follow_redirects=False)
        self._dimension: int | None = None

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self.embed(["dimension"])
        assert self._dimension is not None
        return self._dimension

    def embed(self, texts: list[str], *, timeout: float | None = None) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        try:
            response = self._client.post(
                self.url,
                json={"model": self.model, "input": texts, "encoding_format": "float"},
                timeout=timeout if timeout is not None else self.timeout,
            )
        except httpx.TimeoutException as error:
            raise EmbeddingError(
                f"the embeddings endpoint {self.url} did not answer in time", retryable=True
            ) from error
        except httpx.HTTPError as error:
            raise EmbeddingError(
                f"the embeddings endpoint {self.url} cannot be reached: {error}", retryable=True
            ) from error
        if response.status_code != 200:
            raise EmbeddingError(
                f"the embeddings endpoint {self.url} answered {response.status_code}: "
                f"{response.text[:ERROR_BODY_CHARS]}",
                retryable=response.status_code in RETRYABLE_STATUSES,
            )
        vectors = self._vectors(response, count=len(texts))
        self._dimension = vectors.shape[1]
        return normalized(vectors)

    def _vectors(self, response: httpx.Response, *, count: int) -> np.ndarray:
        try:
            items = sorted(response.json()["data"], key=lambda item: item["index"])
            vectors = np.array([item["embedding"] for item in items], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as error:
            raise EmbeddingError(
                f"the embeddings endpoint {self.url} answered something that is not an embeddings list: {error}",
                retryable=False,
            ) from error
        if vectors.ndim != 2 or vectors.shape[0] != count or vectors.shape[1] == 0:
            raise EmbeddingError(
                f"the embeddings endpoint {self.url} answered {vectors.shape[0] if vectors.ndim else 0} "
                f"vectors for {count} texts",
                retryable=False,
            )
        if self._dimension is not None and vectors.shape[1] != self._dimension:
            raise EmbeddingError(
                f"the embeddings endpoint {self.url} changed dimension from {self._dimension} to {vectors.shape[1]}",
                retryable=False,
            )
        return vectors
