"""`manage.py work`: all the hub's background work (memories.work), in lanes until SIGTERM, or once."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memories.work import JobKind, Worker, job_kinds, run_until_signalled


class Command(BaseCommand):
    help = (
        "Do the hub's background work (the kinds in MEMORYHUB_JOB_KINDS: Honcho sync, evaluation runs, ...): "
        "--loop until SIGTERM, one lane per kind; --once does everything due and exits (1 if a job failed)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        mode = parser.add_mutually_exclusive_group(required=True)
        mode.add_argument("--loop", action="store_true", help="keep working until SIGTERM or Ctrl-C")
        mode.add_argument("--once", action="store_true", help="do everything that is due, then exit")
        parser.add_argument(
            "--kind",
            action="append",
            dest="kinds",
            metavar="NAME",
            help="only this kind of work (repeat for more); default every kind that can run here",
        )

    def handle(self, *args: Any, loop: bool, once: bool, kinds: list[str] | None, **options: Any) -> None:
        worker = Worker(self.usable_kinds(kinds), out=self.stdout.write)
        if once:
            totals = worker.run_once()
            self.stdout.write(
                "work: "
                + "; ".join(f"{name} {report.done} done, {report.failed} failed" for name, report in totals.items())
            )
            failed = sum(report.failed for report in totals.values())
            if failed:
                raise CommandError(f"{failed} job(s) failed")
            return
        self.loop(worker)

    def usable_kinds(self, names: list[str] | None) -> list[JobKind]:
        """The kinds asked for (all by default), less those that cannot run here, each said on stderr."""
        try:
            kinds = job_kinds(names)
        except LookupError as error:
            raise CommandError(str(error)) from None
        usable = []
        for kind in kinds:
            reason = kind.unavailable()
            if reason:
                self.stderr.write(f"work: no {kind.name}: {reason}")
            else:
                usable.append(kind)
        if not usable:
            raise CommandError("no kind of work can run here")
        return usable

    def loop(self, worker: Worker) -> None:
        self.stdout.write(f"work: {', '.join(kind.name for kind in worker.kinds)}; SIGTERM stops")
        run_until_signalled(worker)
        if worker.lane_failed:
            raise CommandError(f"the {worker.lane_failed} lane failed; see the log")
        self.stdout.write("work: stopped")
