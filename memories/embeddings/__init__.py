"""Embedding providers: the only code in the hub that loads a model or calls an embedding endpoint.

`get_provider()` answers the provider named by MEMORYHUB_EMBEDDINGS (None when it is `off`), made
once per process. Every provider follows `EmbeddingProvider`; every failure is an `EmbeddingError`.
"""

from memories.embeddings.base import EmbeddingError, EmbeddingProvider, entry_text, get_provider

__all__ = ["EmbeddingError", "EmbeddingProvider", "entry_text", "get_provider"]
