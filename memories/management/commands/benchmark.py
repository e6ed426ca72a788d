"""`manage.py benchmark`: the speed targets on a fresh SQLite database (the work is benchmarks.speed)."""

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection

from benchmarks import speed


class Command(BaseCommand):
    help = (
        "Seed a fresh SQLite database in a temporary folder, then time put, get, query and a list page "
        "in process, over HTTP (gunicorn on loopback, concurrent clients) and on raw sqlite3, and report."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--entries", type=int, default=1_000_000, help="Entries in all (default 1,000,000).")
        parser.add_argument("--users", type=int, default=10, help="Users (uids) they are spread over (default 10).")
        parser.add_argument("--report", help="Write the report (Markdown) here, keeping its hand-written analysis.")
        parser.add_argument("--samples", type=int, default=300, help="Timed calls per operation and way (default 300).")
        parser.add_argument(
            "--http-requests", type=int, default=3000, help="GETs over HTTP for the throughput (default 3000)."
        )
        parser.add_argument("--http-clients", type=int, default=4, help="Concurrent HTTP client processes (default 4).")
        parser.add_argument("--http-workers", type=int, default=2, help="gunicorn worker processes (default 2).")
        parser.add_argument("--keep", action="store_true", help="Keep the temporary folder with the database.")

    def handle(self, *args: Any, **options: Any) -> None:
        if connection.vendor != "sqlite":
            raise CommandError("The benchmark's targets are for SQLite: run it without DATABASE_URL.")
        entries, users = options["entries"], options["users"]
        if users < 1 or entries < users or options["samples"] < 2 or options["http_clients"] < 1:
            raise CommandError("Need --users >= 1, --entries >= --users, --samples >= 2 and --http-clients >= 1.")
        results = speed.SpeedBenchmark(progress=self.stderr.write).measure(**options)
        report = speed.render_report(results, command=speed.SpeedBenchmark.command_line(options))
        self.stdout.write(report)
        if options["report"]:
            speed.write_report(Path(options["report"]), report)
            self.stderr.write(f"Wrote {options['report']}")
