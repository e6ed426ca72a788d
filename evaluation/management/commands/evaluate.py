import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation.scoring import OPERATIONS, BackendScore
from evaluation.services import DEFAULT_OPS, EvaluationError, EvaluationReport, evaluation_run

HEADERS = (
    "backend",
    "available",
    "put",
    "get",
    "find",
    "put p50/p95 ms",
    "get p50/p95 ms",
    "find p50/p95 ms",
    "privacy",
    "score",
    "grade",
    "recall@5",
)


def _row(score: BackendScore) -> tuple[str, ...]:
    checks, latencies = [], []
    for operation in OPERATIONS:
        result = score.operations.get(operation)
        checks.append("-" if result is None else "ok" if result.ok else "FAIL")
        latencies.append("-" if result is None else f"{result.p50_ms:.2f}/{result.p95_ms:.2f}")
    privacy = "cloud" if score.cloud else "local"
    recall = "-" if score.recall_at_5 is None else f"{score.recall_at_5:.2f}"
    return (
        score.name, "yes" if score.available else "no", *checks, *latencies, privacy, str(score.score), score.grade,
        recall,
    )  # fmt: skip


def report_table(report: EvaluationReport) -> str:
    """The report as an aligned table, then why anything failed, then the recommendation."""
    rows = [HEADERS, *(_row(score) for score in report.scores)]
    widths = [max(len(row[column]) for row in rows) for column in range(len(HEADERS))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]
    for score in report.scores:
        if not score.available:
            lines.append(f"{score.name}: unavailable: {score.reason}")
        for operation, result in score.operations.items():
            if result.error:
                lines.append(f"{score.name}: {operation}: {result.error}")
    lines.append(f"Recommendation: {report.recommendation}")
    return "\n".join(lines)


class Command(BaseCommand):
    help = (
        "Grade the memory backends (null, local, and Honcho when HONCHO_URL or HONCHO_API_KEY is set) "
        "on availability, round trips, latency and privacy, store the run, and recommend one; "
        "each backend's recall@5 on the recall probe is shown beside the grade, not scored."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--backend",
            action="append",
            dest="backends",
            metavar="NAME",
            help="grade only this backend (repeat for more): null, local, honcho",
        )
        parser.add_argument("--ops", type=int, default=DEFAULT_OPS, help=f"calls per operation (default {DEFAULT_OPS})")
        parser.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
        parser.add_argument("--no-save", action="store_true", help="do not store the run")

    def handle(
        self, *args: Any, backends: list[str] | None, ops: int, json: bool, no_save: bool, **options: Any
    ) -> None:
        try:
            report = evaluation_run(backend_names=backends, ops=ops, save=not no_save, progress=self.stderr.write)
        except EvaluationError as error:
            raise CommandError(str(error)) from None
        if json:
            self.stdout.write(_dumps(report.as_json()))
            return
        self.stdout.write(report_table(report))
        self.stdout.write(f"Stored as run {report.run.pk}." if report.run else "Not stored (--no-save).")


def _dumps(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2)
