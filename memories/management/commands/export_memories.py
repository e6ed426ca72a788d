import os
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memories import exchange, selectors


class Command(BaseCommand):
    help = (
        "Write every entry (or one account's) as versioned JSONL: a header with the format version, "
        "count and sha256, then one entry per line. import_memories reads it back."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="Where to write, or '-' for standard output.")
        parser.add_argument("--owner", help="Only this account's entries (a username).")

    def handle(self, *args: object, file: str, owner: str | None, **options: object) -> None:
        account = None
        if owner is not None:
            account = get_user_model().objects.filter(username=owner).first()
            if account is None:
                raise CommandError(f"No account named {owner!r}.")
        rows = selectors.entry_export_rows(owner=account)
        if file == "-":
            header = exchange.write_export(rows, sys.stdout.buffer)
            sys.stdout.buffer.flush()
        else:
            header = self.write_file(rows, Path(file))
        self.stderr.write(f"Exported {header.count} entries (sha256 {header.sha256}).")

    def write_file(self, rows: Iterable[tuple], path: Path) -> exchange.ExportHeader:
        """Write to a temporary file beside path and rename it, so path is never half-written."""
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
        try:
            with os.fdopen(handle, "wb") as destination:
                header = exchange.write_export(rows, destination)
                destination.flush()
                os.fsync(destination.fileno())
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        return header
