import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmarks import recall, recall_report
from evaluation.recall_set import RECALL_SET_PATH, RECALL_UNSEEN_PATH, RecallSetError, recall_set_load


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(part.replace("_", "")) for part in text.split(",") if part.strip()]
    except ValueError:
        raise CommandError(f"--sizes must be whole numbers separated by commas; got {text!r}") from None
    if not sizes or any(size < 1 for size in sizes):
        raise CommandError(f"--sizes must be whole numbers of at least 1; got {text!r}")
    return sizes


class Command(BaseCommand):
    help = (
        "Measure recall@1, recall@5, MRR and query time of the substring, lexical, semantic and hybrid rankings "
        "on the labelled recall sets, in a throwaway account that is removed afterwards."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        default_sizes = ",".join(str(size) for size in recall.DEFAULT_SIZES)
        parser.add_argument(
            "--sizes", default=default_sizes, help=f"entries per user, comma-separated (default {default_sizes})"
        )
        parser.add_argument(
            "--set",
            dest="question_set",
            choices=recall.QUESTION_SETS,
            default="all",
            help="which questions of the shipped set to ask: tune (to tune on), test, or all (default)",
        )
        parser.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
        parser.add_argument("--report", type=Path, metavar="PATH", help="also write the report as Markdown to PATH")
        parser.add_argument("--recall-set", type=Path, default=RECALL_SET_PATH, metavar="PATH", help="a labelled set")
        parser.add_argument(
            "--unseen-set", type=Path, default=RECALL_UNSEEN_PATH, metavar="PATH", help="the never-tuned-on set"
        )

    def handle(
        self,
        *args: Any,
        sizes: str,
        question_set: str,
        json: bool,
        report: Path | None,
        recall_set: Path,
        unseen_set: Path,
        **options: Any,
    ) -> None:
        try:
            shipped, unseen = recall_set_load(recall_set), recall_set_load(unseen_set)
        except (OSError, RecallSetError) as error:
            raise CommandError(str(error)) from None
        result = recall.recall_benchmark_run(
            shipped=shipped,
            unseen=unseen,
            sizes=_sizes(sizes),
            question_set=question_set,
            progress=lambda message: self.stderr.write(message),
        )
        if report is not None:
            command = f"manage.py benchmark_recall --sizes {sizes} --set {question_set} --report {report}"
            recall_report.report_write(report, recall_report.report_markdown(result, command=command))
            self.stderr.write(f"Report written to {report}.")
        self.stdout.write(_dumps(result.as_json()) if json else recall_report.report_table(result))


def _dumps(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False)
