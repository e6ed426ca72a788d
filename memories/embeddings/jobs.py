"""The embedding job: what the background worker (and `manage.py embed`) runs."""

import logging
import threading
from dataclasses import dataclass

from memories.embeddings.base import EmbeddingError
from memories.embeddings.store import DEFAULT_BATCH, embeddings_process_pending

logger = logging.getLogger(__name__)


@dataclass
class EmbedReport:
    embedded: int = 0
    batches: int = 0
    error: str = ""


class EmbeddingJob:
    """Embeds pending entries, a batch at a time, until none is pending.

    `run(stop)` is one pass of the job: it claims, embeds and stores batches of `batch_size` until a
    batch comes back empty, `stop` is set, or the provider fails (the error is reported, the claimed
    entries stay pending, and the next pass tries again).
    """

    name = "embeddings"

    def __init__(self, *, batch_size: int = DEFAULT_BATCH) -> None:
        self.batch_size = batch_size

    def run(self, stop: threading.Event | None = None) -> EmbedReport:
        report = EmbedReport()
        while stop is None or not stop.is_set():
            try:
                stored = embeddings_process_pending(limit=self.batch_size)
            except EmbeddingError as error:
                logger.warning("embeddings: %s", error)
                report.error = str(error)
                break
            if not stored:
                break
            report.embedded += stored
            report.batches += 1
        return report
