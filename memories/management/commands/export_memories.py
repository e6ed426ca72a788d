import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memories import exchange, selectors


class Command(BaseCommand):
    help = (
        "Write every entry (or one account's) as versioned JSONL: a header with the format version, "
        "count and sha256, then one entry per line. import_memories reads it back. --with-history: "
        "a full backup, the account policies, the writes the guard held (pending or decided), the entries "
        "and every history event, which import_memories restores exactly."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="Where to write, or '-' for standard output.")
        parser.add_argument("--owner", help="Only this account's entries (a username).")
        parser.add_argument(
            "--with-history",
            action="store_true",
            help="A full backup: the account policies, the writes the guard held (pending or decided), every entry "
            "and every history event (format version 2).",
        )
        parser.add_argument(
            "--include-expired",
            action="store_true",
            help="Also the entries whose expiry has passed and that the worker has not deleted yet.",
        )

    def handle(
        self,
        *args: object,
        file: str,
        owner: str | None,
        with_history: bool = False,
        include_expired: bool = False,
        **options: object,
    ) -> None:
        account = None
        if owner is not None:
            account = get_user_model().objects.filter(username=owner).first()
            if account is None:
                raise CommandError(f"No account named {owner!r}.")
        rows = selectors.entry_export_rows(owner=account, include_expired=include_expired)

        def write(destination: IO[bytes]) -> exchange.ExportHeader:
            if with_history:
                return exchange.write_backup(
                    rows,
                    selectors.event_export_rows(owner=account),
                    destination,
                    policy_rows=selectors.policy_export_rows(owner=account),
                    held_rows=selectors.held_export_rows(owner=account),
                )
            return exchange.write_export(rows, destination)

        with selectors.export_snapshot():
            if file == "-":
                header = write(sys.stdout.buffer)
                sys.stdout.buffer.flush()
            else:
                header = self.write_file(write, Path(file))
        if header.with_history:
            self.stderr.write(
                f"Exported {header.policies} account {'policy' if header.policies == 1 else 'policies'}, "
                f"{header.held} writes held by the guard, {header.entries} entries and {header.events} "
                f"history events (sha256 {header.sha256})."
            )
            repeated = selectors.repeated_versions(owner=account)
            if repeated:
                named = "; ".join(f"{name}/{uid}/{key} version {version}" for name, uid, key, version in repeated)
                more = "; ..." if len(repeated) == 5 else ""
                self.stderr.write(
                    f"Warning: the history repeats a version of a key ({named}{more}): "
                    "written before migration 0024, when a race could repeat one. import_memories refuses the "
                    "second event of each such version, naming its line, and restores nothing until it is "
                    "resolved in the file."
                )
        else:
            self.stderr.write(
                f"Exported {header.count} entries, {header.local} of them local (sha256 {header.sha256})."
            )

    def write_file(self, write: Callable[[IO[bytes]], exchange.ExportHeader], path: Path) -> exchange.ExportHeader:
        """Write to a temporary file beside path and rename it, so path is never half-written."""
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
        try:
            with os.fdopen(handle, "wb") as destination:
                header = write(destination)
                destination.flush()
                os.fsync(destination.fileno())
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        return header
