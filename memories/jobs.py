"""The kinds of background work the memories app brings to `manage.py work` (see memories.work).

sync_job drains the Honcho sync outbox (memories.outbox) through memories.sync.worker. The Honcho
SDK is imported only when a runner is made, so a hub without Honcho never loads it.
"""

import threading
from typing import TYPE_CHECKING

from django.conf import settings
from django.db.models import QuerySet

from memories import selectors
from memories.backends.honcho_config import HonchoConfig
from memories.models import SyncTask
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
