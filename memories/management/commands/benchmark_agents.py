import shutil
import tempfile
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection

from benchmarks import agents as agents_benchmark


class Command(BaseCommand):
    help = (
        "Time what agents call, on a fresh SQLite database in a temporary folder: the context block in "
        "process at --entries per user, and (unless --no-http) MCP recall over Streamable HTTP beside the "
        "same REST ?q= request, against a server on loopback serving memoryhub.asgi."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--entries", type=int, default=1000, help="Entries per user (default 1,000).")
        parser.add_argument("--users", type=int, default=5, help="Users of the account (default 5).")
        parser.add_argument("--samples", type=int, default=300, help="Timed calls per operation (default 300).")
        parser.add_argument("--no-http", action="store_true", help="Only the in-process context figures.")

    def handle(self, *args: Any, entries: int, users: int, samples: int, no_http: bool, **options: Any) -> None:
        if connection.vendor != "sqlite":
            raise CommandError("The agents' targets are for SQLite: run it without DATABASE_URL.")
        if entries < 1 or users < 1 or samples < 10:
            raise CommandError("Need --entries >= 1, --users >= 1 and --samples >= 10.")
        workdir = Path(tempfile.mkdtemp(prefix="memoryhub-agents-benchmark-"))
        database_settings = connection.settings_dict
        original_name = database_settings["NAME"]
        try:
            connection.close()
            database_settings["NAME"] = str(workdir / "memoryhub.sqlite3")
            report = agents_benchmark.run(
                workdir=workdir,
                entries=entries,
                users=users,
                samples=samples,
                http=not no_http,
                progress=lambda message: self.stderr.write(message),
            )
        finally:
            connection.close()
            database_settings["NAME"] = original_name
            shutil.rmtree(workdir, ignore_errors=True)
        self.stdout.write(report)
