import bisect
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError, CommandParser, OutputWrapper
from django.db import connection

from memories import exchange, services
from memories.validation import InvalidField

DEFAULT_CHUNK_SIZE = 5000
IMPORT_CACHE_KIB = 64 * 1024
ERRORS_SHOWN = 20


@dataclass
class ImportReport:
    lines: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    # Lines for an (owner, uid, key) met earlier in the same chunk: applied after it, in order.
    repeated: int = 0
    refused: int = 0
    # Lines the write guard held for review (their accounts' guard mode is hold): not stored as entries.
    held: int = 0
    # The ERRORS_SHOWN refusals of the lowest line numbers, in line order (a chunk's lines are refused
    # out of order: unreadable ones as read, the others when the chunk is written); so a file of bad
    # lines cannot fill memory.
    errors: list[tuple[int, str]] = field(default_factory=list)

    def refuse(self, line_number: int, message: str) -> None:
        self.refused += 1
        bisect.insort(self.errors, (line_number, message))
        if len(self.errors) > ERRORS_SHOWN:
            self.errors.pop()

    def summary(self, *, dry_run: bool) -> str:
        verb = "would be" if dry_run else "were"
        return (
            f"{self.lines} entries read: {self.created} {verb} created, {self.updated} {verb} updated, "
            f"{self.unchanged} unchanged, {self.refused} refused"
            + (f", {self.held} {verb} held for review by the write guard" if self.held else "")
            + (
                f" ({self.repeated} repeated a key of an earlier line and {verb} applied after it, in order)."
                if self.repeated
                else "."
            )
        )


class Progress:
    """Entries done, rate and time left on standard error: a line redrawn on a terminal, else a line per chunk."""

    def __init__(self, total: int, stream: OutputWrapper, *, unit: str = "entries") -> None:
        self.total = total
        self.unit = unit
        self.stream = stream
        self.started = time.monotonic()
        self.on_terminal = stream.isatty()

    def line(self, done: int) -> str:
        elapsed = max(time.monotonic() - self.started, 1e-6)
        rate = done / elapsed
        left = (self.total - done) / rate if rate > 0 else 0.0
        percent = 100 * done / self.total if self.total else 100.0
        return f"{done:,} of {self.total:,} {self.unit} ({percent:.0f}%), {rate:,.0f}/s, {_duration(left)} left"

    def show(self, done: int) -> None:
        if self.on_terminal:
            self.stream.write("\r" + self.line(done) + "\x1b[K", ending="")
        else:
            self.stream.write(self.line(done))
        self.stream.flush()

    def finish(self) -> None:
        if self.on_terminal:
            self.stream.write("")
            self.stream.flush()


def _counted(number: int, singular: str, plural: str) -> str:
    return f"{number} {singular if number == 1 else plural}"


def _duration(seconds: float) -> str:
    minutes, seconds = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{seconds:02d}s" if minutes else f"{seconds}s"


class Command(BaseCommand):
    help = (
        "Read a file written by export_memories and upsert its entries through the services, in "
        "chunks (bounded memory). The file's count and checksum are checked before anything is written. "
        "A backup with history (export_memories --with-history) is restored exactly, in one transaction, "
        "into users that hold nothing yet."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="A JSONL file written by export_memories.")
        parser.add_argument("--owner", help="Import every entry into this account (a username), whoever held it.")
        parser.add_argument("--dry-run", action="store_true", help="Check and count; write nothing.")
        parser.add_argument("--chunk-size", type=int, default=DEFAULT_CHUNK_SIZE, help="Entries per transaction.")
        parser.add_argument("--quiet", action="store_true", help="No progress lines on standard error.")
        parser.add_argument(
            "--create-accounts",
            action="store_true",
            help="Restoring a backup with history: make the accounts it names that this hub lacks "
            "(no usable password, no token).",
        )

    def handle(
        self,
        *args: object,
        file: str,
        owner: str | None,
        dry_run: bool,
        chunk_size: int,
        quiet: bool = False,
        create_accounts: bool = False,
        **options: object,
    ) -> None:
        if chunk_size < 1:
            raise CommandError("--chunk-size must be at least 1.")
        path = Path(file)
        if not path.is_file():
            raise CommandError(f"No file at {file}.")
        try:
            header = exchange.verify(path)
        except exchange.ExportFileError as error:
            raise CommandError(f"{file} was not imported: {error}.") from None
        if header.with_history:
            if owner is not None:
                raise CommandError(
                    "--owner does not apply to a backup with history: it is restored into the accounts it names."
                )
            self.restore_file(
                path,
                header=header,
                create_accounts=create_accounts,
                dry_run=dry_run,
                chunk_size=chunk_size,
                quiet=quiet,
            )
            return
        if create_accounts:
            raise CommandError(
                "--create-accounts is for a backup with history (export_memories --with-history); "
                f"{file} holds entries only."
            )
        target = None
        if owner is not None:
            target = get_user_model().objects.filter(username=owner).first()
            if target is None:
                raise CommandError(f"No account named {owner!r}.")
        if connection.vendor == "sqlite":
            # A 64 MiB page cache for this connection (SQLite's default is 2 MiB): a large import
            # touches the entry, history and full-text index pages over and over.
            with connection.cursor() as cursor:
                cursor.execute(f"PRAGMA cache_size = -{IMPORT_CACHE_KIB}")
        progress = None if quiet else Progress(header.count, self.stderr)
        report = self.import_file(path, target=target, dry_run=dry_run, chunk_size=chunk_size, progress=progress)
        if progress is not None:
            progress.finish()
        if not dry_run and (report.created or report.updated):
            services.search_statistics_refresh()
        self.stdout.write(report.summary(dry_run=dry_run))
        for line_number, message in report.errors:
            self.stdout.write(f"  line {line_number}: {message}")
        if report.refused > len(report.errors):
            self.stdout.write(f"  ... and {report.refused - len(report.errors)} more.")
        if report.refused:
            raise CommandError(
                f"{report.refused} entries were refused; the others were {'checked' if dry_run else 'imported'}."
            )

    def restore_file(
        self,
        path: Path,
        *,
        header: exchange.ExportHeader,
        create_accounts: bool,
        dry_run: bool,
        chunk_size: int,
        quiet: bool,
    ) -> None:
        """Restore a verified backup with history, all of it or nothing, and say what it restored."""
        progress = None if quiet else Progress(header.count, self.stderr, unit="lines")
        counts = services.history_restore(
            lines=self.backup_lines(path),
            create_accounts=create_accounts,
            dry_run=dry_run,
            chunk_size=chunk_size,
            on_round=progress.show if progress is not None else None,
        )
        if progress is not None:
            progress.finish()
        if counts.refused:
            self.stdout.write(f"{counts.lines} lines read: {counts.refused} refused, so nothing was restored.")
            for line_number, error in counts.errors:
                self.stdout.write(f"  line {line_number}: {error}")
            if counts.refused > len(counts.errors):
                self.stdout.write(f"  ... and {counts.refused - len(counts.errors)} more.")
            raise CommandError(f"{counts.refused} lines were refused; nothing was restored.")
        if not dry_run and counts.entries:
            services.search_statistics_refresh()
        verb = "would be" if dry_run else "were"
        created = counts.accounts_created
        account_verb = "would be" if dry_run else "was" if len(created) == 1 else "were"
        self.stdout.write(
            f"{counts.lines} lines read: {counts.entries} entries and {counts.events} history events {verb} restored"
            + (f", with {_counted(counts.policies, 'account policy', 'account policies')}" if counts.policies else "")
            + (
                f", and {_counted(counts.held, 'write held by the guard', 'writes held by the guard')}"
                if counts.held
                else ""
            )
            + (
                f"; {_counted(len(created), 'account', 'accounts')} {account_verb} created ({', '.join(created)})."
                if created
                else "."
            )
        )

    @staticmethod
    def backup_lines(path: Path) -> Iterator[services.RestoreLine]:
        """Each line of a backup with history, numbered, as a record or as the error that it is not one."""
        for line_number, line in exchange.entry_lines(path):
            try:
                yield line_number, exchange.parse_backup_line(line)
            except InvalidField as error:
                yield line_number, error

    def import_file(
        self,
        path: Path,
        *,
        target: User | None,
        dry_run: bool,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        progress: Progress | None = None,
    ) -> ImportReport:
        """Import every entry line of a verified file, chunk by chunk, into target or each line's owner."""
        report = ImportReport()
        accounts: dict[str, User | None] = {}
        chunk: list[tuple[int, str | None, services.ImportRecord]] = []
        for line_number, line in exchange.entry_lines(path):
            report.lines += 1
            try:
                owner_name, record = exchange.parse_line(line)
            except InvalidField as error:
                report.refuse(line_number, str(error))
                continue
            chunk.append((line_number, owner_name, record))
            if len(chunk) >= chunk_size:
                self._import_chunk(chunk, target=target, accounts=accounts, dry_run=dry_run, report=report)
                chunk = []
                if progress is not None:
                    progress.show(report.lines)
        if chunk:
            self._import_chunk(chunk, target=target, accounts=accounts, dry_run=dry_run, report=report)
        if progress is not None:
            progress.show(report.lines)
        return report

    def _import_chunk(
        self,
        chunk: list[tuple[int, str | None, services.ImportRecord]],
        *,
        target: User | None,
        accounts: dict[str, User | None],
        dry_run: bool,
        report: ImportReport,
    ) -> None:
        by_owner: dict[int, tuple[User, list[int], list[services.ImportRecord]]] = {}
        for line_number, owner_name, record in chunk:
            account = target
            if account is None:
                if owner_name is None:
                    report.refuse(line_number, "owner: is required (or pass --owner).")
                    continue
                if owner_name not in accounts:
                    accounts[owner_name] = get_user_model().objects.filter(username=owner_name).first()
                account = accounts[owner_name]
                if account is None:
                    report.refuse(line_number, f"owner: no account named {owner_name!r} (create it, or pass --owner).")
                    continue
            _, line_numbers, records = by_owner.setdefault(account.pk, (account, [], []))
            line_numbers.append(line_number)
            records.append(record)
        for account, line_numbers, records in by_owner.values():
            counts = services.entries_import(owner=account, records=records, dry_run=dry_run)
            report.created += counts.created
            report.updated += counts.updated
            report.unchanged += counts.unchanged
            report.repeated += counts.repeated
            report.held += counts.held
            for index, error in counts.invalid:
                report.refuse(line_numbers[index], str(error))
