"""The kinds of background work the memories app brings to `manage.py work` (see memories.work).

sync_job drains the Honcho sync outbox (memories.outbox) through memories.sync.worker. The Honcho
SDK is imported only when a runner is made, so a hub without Honcho never loads it. embedding_job
embeds changed entries; expiry_job deletes the entries whose expiry has passed.
"""

import threading
from typing import TYPE_CHECKING

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from memories import selectors
from memories.backends.honcho_config import HonchoConfig
from memories.models import EntryEmbedding, MemoryEntry, SyncTask
from memories.work import JobKind, WorkReport

if TYPE_CHECKING:
    from memories.sync.worker import DrainReport


class SyncRunner:
    """Drains the outbox to Honcho through one HonchoStore (one per lane)."""

    def __init__(self) -> None:
        from memories.backends.honcho import HonchoStore
        from memories.sync.worker import SyncWorker

        self.store = HonchoStore(HonchoConfig.from_settings(), max_retries=0)
        self.worker = SyncWorker(self.store)

    def run_due(self, stop: threading.Event) -> WorkReport:
        report = self.worker.drain(stop)
        done, failed = report.pushed + report.superseded, report.failed
        if not (done or failed):
            return WorkReport()
        return WorkReport(done=done, failed=failed, summary=sync_summary(report))

    def close(self) -> None:
        self.store.close()


def sync_summary(report: "DrainReport") -> str:
    """One drain, and the outbox after it (two queries)."""
    status = selectors.sync_status(owner=None)
    line = (
        f"pushed {report.pushed}, failed {report.failed} ({report.retrying} to retry, {report.parked} parked); "
        f"outbox now: {status.pending} pending, {status.failed} failed"
    )
    if report.stopped_early:
        line += "; stopped early: Honcho keeps failing"
    return line


def _sync_unavailable() -> str:
    if not HonchoConfig.from_settings().configured:
        return "Honcho is not configured (HONCHO_URL or HONCHO_API_KEY)"
    return ""


def _sync_waiting() -> QuerySet:
    """Pending tasks; none when sync is off (the status then costs no query of the outbox)."""
    if not settings.MEMORYHUB_HONCHO_SYNC:
        return SyncTask.objects.none()
    return SyncTask.objects.filter(status=SyncTask.Status.PENDING)


sync_job = JobKind(
    name="sync",
    waiting=_sync_waiting,
    runner=SyncRunner,
    poll_seconds=lambda: settings.MEMORYHUB_SYNC_POLL_SECONDS,
    unavailable=_sync_unavailable,
)


# An idle embeddings lane looks again this often: a write is findable by meaning within about a second.
EMBEDDING_POLL_SECONDS = 0.5


class EmbeddingRunner:
    """Embeds pending entries (memories.embeddings.jobs.EmbeddingJob) a pass at a time, in one lane."""

    def __init__(self) -> None:
        from memories.embeddings.jobs import EmbeddingJob

        self.job = EmbeddingJob()

    def run_due(self, stop: threading.Event) -> WorkReport:
        report = self.job.run(stop)
        if not report.embedded and not report.error:
            return WorkReport()
        summary = f"embedded {report.embedded} entries in {report.batches} batches"
        if report.error:
            summary += f"; the provider failed: {report.error} (those entries stay pending)"
        return WorkReport(done=report.embedded, failed=1 if report.error else 0, summary=summary)

    def close(self) -> None:
        return None


def _embeddings_unavailable() -> str:
    return "" if settings.MEMORYHUB_EMBEDDINGS != "off" else "embeddings are off (MEMORYHUB_EMBEDDINGS=off)"


def _embeddings_waiting() -> QuerySet:
    """Entries whose text changed since their vector was made; none when embeddings are off."""
    if settings.MEMORYHUB_EMBEDDINGS == "off":
        return EntryEmbedding.objects.none()
    return EntryEmbedding.objects.filter(pending=True)


embedding_job = JobKind(
    name="embeddings",
    waiting=_embeddings_waiting,
    runner=EmbeddingRunner,
    poll_seconds=lambda: EMBEDDING_POLL_SECONDS,
    unavailable=_embeddings_unavailable,
)


# An idle expiry lane looks again this often. Reads stop showing an entry the moment it expires;
# this is only how soon its row (and its Honcho session) goes.
EXPIRY_POLL_SECONDS = 5.0


class ExpiryRunner:
    """Deletes expired entries a batch (services.EXPIRY_BATCH) at a time, each with an "expire" event."""

    def run_due(self, stop: threading.Event) -> WorkReport:
        from memories.services import entries_expire

        removed = entries_expire()
        if not removed:
            return WorkReport()
        return WorkReport(done=removed, summary=f"deleted {removed} expired entries")

    def close(self) -> None:
        return None


def _expiry_waiting() -> QuerySet:
    """Entries whose expiry has passed (the partial index memory_entry_expires holds only entries that expire)."""
    return MemoryEntry.objects.filter(expires__lte=timezone.now())


expiry_job = JobKind(
    name="expiry",
    waiting=_expiry_waiting,
    runner=ExpiryRunner,
    poll_seconds=lambda: EXPIRY_POLL_SECONDS,
)
