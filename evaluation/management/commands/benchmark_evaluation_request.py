"""`manage.py benchmark_evaluation_request`: staff POSTs of an evaluation answer 202 at once; the worker measures."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmarks.evaluation_request import evaluation_request_measure


class Command(BaseCommand):
    help = (
        "Time staff POSTs of an evaluation (null, local and a Honcho double answering --latency seconds late) "
        "and the worker measuring one; a throwaway account, removed afterwards."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--ops", type=int, default=1000, help="operations per kind (default 1000)")
        parser.add_argument("--latency", type=float, default=0.02, help="seconds each Honcho call waits (0.02)")
        parser.add_argument("--posts", type=int, default=20, help="POSTs timed (default 20)")

    def handle(self, *args: Any, ops: int, latency: float, posts: int, **options: Any) -> None:
        try:
            report = evaluation_request_measure(ops=ops, latency=latency, posts=posts)
        except RuntimeError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(
            f"POST /api/v1/evaluations/ (ops={report.ops}, Honcho {report.latency_ms:g} ms late), in process: "
            f"p50 {report.posts.p50_ms:.1f} ms, p95 {report.posts.p95_ms:.1f} ms over {len(report.posts.seconds)}, "
            f"statuses {sorted(report.statuses)}"
        )
        self.stdout.write(f"the worker measured the run in {report.run_seconds:.1f} s: {report.run_status}")
