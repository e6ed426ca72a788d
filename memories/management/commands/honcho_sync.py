"""`manage.py honcho_sync`: drain the sync outbox to Honcho, once or in a loop; retry failed tasks; reconcile."""

import signal
import threading
from types import FrameType
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import close_old_connections
from django.utils import timezone

from memories import outbox
from memories.backends.base import BackendError
from memories.backends.honcho import HonchoConfig, HonchoStore
from memories.selectors import sync_status
from memories.sync.worker import DrainReport, SyncWorker, reconcile, reconciliation_fix

DIFFERENCES_SHOWN = 20


class Command(BaseCommand):
    help = (
        "Mirror the hub's changes to Honcho: --once drains the outbox and exits (1 if a push failed), "
        "--loop keeps draining until SIGTERM, --retry-failed puts failed tasks back, "
        "--reconcile compares the hub with Honcho (--fix queues the repairs)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        mode = parser.add_mutually_exclusive_group(required=True)
        mode.add_argument(
            "--once", action="store_true", help="drain what is due, then exit: 0 if every push worked, 1 if any failed"
        )
        mode.add_argument(
            "--loop", action="store_true", help="keep draining, every --interval seconds, until SIGTERM or Ctrl-C"
        )
        mode.add_argument(
            "--retry-failed", action="store_true", help="put every failed task back in the queue, due now"
        )
        mode.add_argument(
            "--reconcile",
            action="store_true",
            help="report entries missing or stale in Honcho, and sessions extra there",
        )
        parser.add_argument(
            "--fix", action="store_true", help="with --reconcile: queue the tasks that repair the differences"
        )
        parser.add_argument(
            "--interval",
            type=float,
            default=None,
            help=(
                "with --loop: seconds between drains "
                f"(default MEMORYHUB_SYNC_POLL_SECONDS, {settings.MEMORYHUB_SYNC_POLL_SECONDS:g})"
            ),
        )

    def handle(
        self,
        *args: Any,
        once: bool,
        loop: bool,
        retry_failed: bool,
        reconcile: bool,
        fix: bool,
        interval: float | None,
        **options: Any,
    ) -> None:
        if fix and not reconcile:
            raise CommandError("--fix goes with --reconcile")
        if interval is not None and interval <= 0:
            raise CommandError(f"--interval must be greater than 0; got {interval:g}")
        if retry_failed:
            count = outbox.tasks_retry_failed(now=timezone.now())
            self.stdout.write(f"{count} failed task(s) queued again.")
            return
        config = HonchoConfig.from_settings()
        if not config.configured:
            raise CommandError("Honcho is not configured: set HONCHO_URL (self-hosted) or HONCHO_API_KEY (cloud)")
        if not settings.MEMORYHUB_HONCHO_SYNC and not reconcile:
            self.stderr.write(
                "note: MEMORYHUB_HONCHO_SYNC is off, so writes queue nothing; draining what is already queued."
            )
        store = HonchoStore(config, max_retries=0)
        try:
            if reconcile:
                self.reconcile(store, fix=fix)
            elif once:
                report = SyncWorker(store).drain()
                self.stdout.write(self.summary(report))
                if report.failed:
                    raise CommandError(f"{report.failed} push(es) failed; last error: {report.last_error}")
            else:
                self.loop(SyncWorker(store), interval=interval or settings.MEMORYHUB_SYNC_POLL_SECONDS)
        finally:
            store.close()

    def summary(self, report: DrainReport) -> str:
        status = sync_status(owner=None)
        line = (
            f"pushed {report.pushed}, failed {report.failed} ({report.retrying} to retry, {report.parked} parked); "
            f"outbox now: {status.pending} pending, {status.failed} failed"
        )
        if report.stopped_early:
            line += "; stopped early: Honcho keeps failing"
        return line

    def loop(self, worker: SyncWorker, *, interval: float, stop: threading.Event | None = None) -> None:
        """Drain, wait `interval` seconds, again, until SIGTERM or SIGINT (or `stop` is set); a drain in
        progress finishes its current batch first. Each drain's summary is printed when it did something."""
        stop = stop or threading.Event()

        def request_stop(signum: int, frame: FrameType | None) -> None:
            stop.set()

        previous = {}
        if threading.current_thread() is threading.main_thread():  # signal handlers can only be set there
            previous = {number: signal.signal(number, request_stop) for number in (signal.SIGTERM, signal.SIGINT)}
        self.stdout.write(f"honcho_sync: draining every {interval:g} s; SIGTERM stops")
        try:
            while not stop.is_set():
                # a long-lived process: drop a database connection that is too old or broken, as a request would
                close_old_connections()
                report = worker.drain(stop)
                if report.pushed or report.failed or report.superseded:
                    self.stdout.write(self.summary(report))
                stop.wait(interval)
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)
        self.stdout.write("honcho_sync: stopped")

    def reconcile(self, store: HonchoStore, *, fix: bool) -> None:
        try:
            result = reconcile(store)
        except BackendError as error:
            raise CommandError(f"cannot reconcile: {error.message}") from None
        self.stdout.write(
            f"{result.entries} entries in the hub, {result.sessions} sessions in Honcho: "
            f"{result.count('missing')} missing, {result.count('stale')} stale, {result.count('extra')} extra"
        )
        for difference in result.differences[:DIFFERENCES_SHOWN]:
            self.stdout.write(
                f"  {difference.kind:7} owner {difference.owner_id} {difference.uid}/{difference.key} "
                f"v{difference.version} (session {difference.session_id})"
            )
        if len(result.differences) > DIFFERENCES_SHOWN:
            self.stdout.write(f"  ... and {len(result.differences) - DIFFERENCES_SHOWN} more")
        if fix:
            queued = reconciliation_fix(result, now=timezone.now())
            self.stdout.write(
                f"{queued} task(s) queued; run `manage.py honcho_sync --once` (or the loop) to push them."
            )
