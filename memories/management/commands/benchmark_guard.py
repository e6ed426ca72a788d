"""`manage.py benchmark_guard`: the write guard's false positives on ordinary text, its scan time, its write cost."""

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmarks.guard import guard_benchmark_run


class Command(BaseCommand):
    help = (
        "Measure the write guard: how many ordinary texts (Python's and Django's documentation and "
        "translations, emoji sequences) it flags, how long a scan takes, and a put with the guard off and on "
        "side by side, in a throwaway account removed afterwards."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--writes", type=int, default=1000, help="puts per side (default 1000)")
        parser.add_argument(
            "--block", type=int, default=50, help="puts per block; the sides alternate block by block (default 50)"
        )
        parser.add_argument("--report", type=Path, help="also write the report (Markdown) to this file")

    def handle(self, *args: Any, writes: int, block: int, report: Path | None, **options: Any) -> None:
        if not 20 <= writes <= 100_000 or not 1 <= block <= writes:
            raise CommandError("--writes must be 20 to 100000, and --block 1 to --writes")
        text = guard_benchmark_run(writes=writes, block=block).markdown()
        self.stdout.write(text)
        if report is not None:
            report.write_text(text, encoding="utf-8")
