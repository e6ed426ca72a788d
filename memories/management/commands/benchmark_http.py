import os
import tempfile
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmarks import serving


class Command(BaseCommand):
    help = (
        "Measure the hub over HTTP beside a plain Django and DRF floor (and Honcho when HONCHO_URL answers), "
        "all served the same way in one run, with wrk as the client; write the table with its ratios."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--entries", type=int, default=serving.DEFAULT_ENTRIES, help="entries for the user read")
        parser.add_argument("--workers", type=int, default=serving.DEFAULT_WORKERS, help="worker processes per server")
        parser.add_argument("--seconds", type=float, default=serving.DEFAULT_SECONDS, help="seconds per figure")
        parser.add_argument(
            "--report",
            default=str(Path(tempfile.gettempdir()) / "memoryhub-benchmark-http.md"),
            help="where the table goes (docs/BENCHMARKS.md refreshes the committed one's section)",
        )
        parser.add_argument("--no-wsgi", action="store_true", help="skip the WSGI rows")

    def handle(self, *args: Any, **options: Any) -> None:
        if int(options["entries"]) < 100 or int(options["workers"]) < 1 or float(options["seconds"]) <= 0:
            raise CommandError("--entries must be at least 100, --workers at least 1, --seconds above 0")
        try:
            report = serving.benchmark_http(
                entries=int(options["entries"]),
                workers=int(options["workers"]),
                seconds=float(options["seconds"]),
                database_url=os.environ.get("DATABASE_URL", ""),
                honcho_url=os.environ.get("HONCHO_URL", ""),
                honcho_api_key=os.environ.get("HONCHO_API_KEY", ""),
                compare_wsgi=not options["no_wsgi"],
                progress=lambda message: self.stderr.write(f"  {message}"),
            )
        except RuntimeError as error:
            raise CommandError(str(error)) from None
        path = Path(str(options["report"]))
        serving.write_report(report, path)
        self.stdout.write(serving.report_markdown(report))
        self.stdout.write(f"Report written to {path}")
