"""The local provider: a static embedding model shipped in memories/embeddings/model, run in-process.

The model (distilled from all-MiniLM-L6-v2 by scripts/export_local_model.py; the choice is measured in
docs/RECALL.md) is loaded on first use, once per process, from the files beside this module: nothing
is fetched at run time. It needs numpy and model2vec, no torch; a process holds about 65 MB more once it is loaded.
"""

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from memories.embeddings.base import EmbeddingError, normalized

if TYPE_CHECKING:
    from model2vec import StaticModel

MODEL_DIR = Path(__file__).resolve().parent / "model"
MODEL_NAME = "minilm-l6-v2-static-256"


class LocalProvider:
    """Embeds with the shipped static model; no network, no GPU, microseconds per text."""

    name = MODEL_NAME
    # Nothing leaves the machine: local entries are embedded too.
    remote = False

    def __init__(self, model_dir: Path = MODEL_DIR) -> None:
        self.model_dir = model_dir
        self._model: StaticModel | None = None
        self._lock = threading.Lock()

    def _loaded(self) -> "StaticModel":
        """The model, loaded on first use (model2vec is imported only then: `off` never pays for it)."""
        if self._model is None:
            with self._lock:
                if self._model is None:
                    # The model is a local folder; make sure no library thinks of asking a hub.
                    os.environ.setdefault("HF_HUB_OFFLINE", "1")
                    try:
                        from model2vec import StaticModel

                        self._model = StaticModel.from_pretrained(str(self.model_dir))
                    except (ImportError, OSError, ValueError) as error:
                        raise EmbeddingError(
                            f"the local embedding model in {self.model_dir} cannot be loaded: {error}", retryable=False
                        ) from error
        return self._model

    @property
    def dimension(self) -> int:
        return int(self._loaded().dim)

    def embed(self, texts: list[str], *, timeout: float | None = None) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = self._loaded().encode(texts, use_multiprocessing=False)
        return normalized(vectors)
