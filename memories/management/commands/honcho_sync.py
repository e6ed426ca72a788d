"""`manage.py honcho_sync`: drain the sync outbox to Honcho, once or in a loop; retry failed tasks; reconcile.

--once and --loop are `manage.py work` for the sync kind alone (memories.jobs.sync_job, the same code).
"""

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from memories import outbox
from memories.backends.base import BackendError
from memories.backends.honcho_config import HonchoConfig
from memories.jobs import SyncRunner, sync_job, sync_summary
from memories.work import Worker, run_until_signalled

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
            help="report entries missing or stale in Honcho, sessions extra there, and local entries found there",
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
        if reconcile:
            self.reconcile(fix=fix)
        elif once:
            runner = SyncRunner()
            try:
                report = runner.worker.drain()
            finally:
                runner.close()
            self.stdout.write(sync_summary(report))
            if report.failed:
                raise CommandError(f"{report.failed} push(es) failed; last error: {report.last_error}")
        else:
            self.loop(Worker([sync_job], out=self.stdout.write, poll_seconds=interval))

    def loop(self, worker: Worker) -> None:
        """Drain, wait, again, until SIGTERM or SIGINT; a drain in progress finishes its current batch first.
        Each drain's summary is printed when it did something."""
        interval = worker.poll_seconds or sync_job.poll_seconds()
        self.stdout.write(f"honcho_sync: draining every {interval:g} s; SIGTERM stops")
        run_until_signalled(worker)
        self.stdout.write("honcho_sync: stopped")

    def reconcile(self, *, fix: bool) -> None:
        from memories.backends.honcho import HonchoStore
        from memories.sync.worker import reconcile, reconciliation_fix

        store = HonchoStore(HonchoConfig.from_settings(), max_retries=0)
        try:
            result = reconcile(store)
        except BackendError as error:
            raise CommandError(f"cannot reconcile: {error.message}") from None
        finally:
            store.close()
        self.stdout.write(
            f"{result.entries} entries in the hub, {result.sessions} sessions in Honcho: "
            f"{result.count('missing')} missing, {result.count('stale')} stale, {result.count('extra')} extra, "
            f"{result.count('local')} local-only entries in Honcho (should be 0)"
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
