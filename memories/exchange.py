"""The export file: versioned JSONL that export_memories writes and import_memories reads.

Line 1 is the header, a JSON object:
    {"format": "memoryhub.memories", "format_version": 1, "count": N, "local": L, "sha256": "...",
     "exported_at": "..."}
Then N lines, one entry each:
    {"owner": "alice", "uid": "...", "key": "...", "value": "...", "kind": "...", "meta": {...},
     "privacy": "shared", "created": "2026-11-29T22:57:57.123456+00:00", "updated": "...", "version": 3,
     "expires": null}
("expires": when the entry expires, or null; a file without it reads as null.)
sha256 is the hex digest of every byte after the header line, so a truncated or edited file is
refused before anything is imported. Timestamps are ISO 8601 with microseconds and a time zone.
Local entries are exported too (a backup stays on the machine), marked "privacy": "local", and the
header counts them (L); they are imported local again. A line without privacy (a file from before
privacy classes) takes the importing account's default.

Format version 2 is the full backup (export_memories --with-history): the same header with
"format_version": 2, "count" counting every line after it, and "entries" and "events" counting
each kind, and "policies" counting the account policies. Every line names its kind in "line": first
each account's policy, for the accounts that have one (a backup from before policies were kept has
none), then the entries, as in version 1 plus "line": "entry", then the history, one event per line,
oldest first:
    {"line": "policy", "owner": "alice", "default_privacy": "local", "guard_mode": "hold",
     "context_includes_flagged": false}
    {"line": "event", "owner": "alice", "uid": "...", "key": "...", "action": "update", "version": 3,
     "value_before": "...", "value_after": "...", "kind_before": "...", "kind_after": "...",
     "meta_before": {...}, "meta_after": {...}, "privacy_before": "shared", "privacy_after": "local",
     "created_before": "...", "entries_erased": null, "actor": "alice", "at": "2026-11-29T22:57:57.123456+00:00"}
The *_before fields are null for a create, the *_after ones for a delete; actor is null when the
account that made the change was deleted. created_before is the entry's creation time before the change,
which a restore of a deleted entry gives back; it is null for a create, and in history written before the
hub recorded it (a line without it reads as null). An erasure's event has the action "erase", an empty key,
version 0, no values, and entries_erased. A hub that reads only version 1 refuses a version 2 file
whole, rather than taking its history lines for entries.
"""

import hashlib
import json
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from django.utils import timezone

from memories.models import DEFAULT_KIND, Privacy
from memories.services import ImportRecord, RestoreEntry, RestoreEvent
from memories.services.imports import RestoreHeld, RestorePolicy
from memories.validation import InvalidField, check_moment_in_range

FORMAT_NAME = "memoryhub.memories"
FORMAT_VERSION = 1
HISTORY_FORMAT_VERSION = 2
READABLE_FORMAT_VERSIONS = (FORMAT_VERSION, HISTORY_FORMAT_VERSION)
ENTRY_LINE = "entry"
EVENT_LINE = "event"
POLICY_LINE = "policy"
HELD_LINE = "held"
BACKUP_LINES = (POLICY_LINE, HELD_LINE, ENTRY_LINE, EVENT_LINE)
COPY_BUFFER_BYTES = 1024 * 1024
# Where a row of selectors.EXPORT_FIELDS holds the entry's privacy class.
EXPORT_PRIVACY_INDEX = 6


class ExportFileError(ValueError):
    """The file is not a MemoryHub export this version can read, or it does not match its header."""


@dataclass(frozen=True)
class ExportHeader:
    format_version: int
    count: int
    sha256: str
    entries: int | None = None
    events: int | None = None
    local: int = 0
    policies: int | None = None
    held: int | None = None

    @property
    def with_history(self) -> bool:
        return self.format_version == HISTORY_FORMAT_VERSION


def _json_line(content: dict[str, Any]) -> bytes:
    return json.dumps(content, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def _moment(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _entry_fields(row: tuple) -> dict[str, Any]:
    owner, uid, key, value, kind, meta, privacy, created, updated, version, expires = row
    return {
        "owner": owner,
        "uid": uid,
        "key": key,
        "value": value,
        "kind": kind,
        "meta": meta,
        "privacy": privacy,
        "created": created.isoformat(),
        "updated": updated.isoformat(),
        "version": version,
        "expires": _moment(expires),
    }


def entry_line(row: tuple) -> bytes:
    """One export line for a row of selectors.EXPORT_FIELDS."""
    return _json_line(_entry_fields(row))


def backup_entry_line(row: tuple) -> bytes:
    """One entry line of a backup with history, for a row of selectors.EXPORT_FIELDS."""
    return _json_line({"line": ENTRY_LINE, **_entry_fields(row)})


def backup_policy_line(row: tuple) -> bytes:
    """One account policy line of a backup, for a row of
    (username, default_privacy, guard_mode, context_includes_flagged)."""
    owner, default_privacy, guard_mode, context_includes_flagged = row
    return _json_line(
        {
            "line": POLICY_LINE,
            "owner": owner,
            "default_privacy": default_privacy,
            "guard_mode": guard_mode,
            "context_includes_flagged": context_includes_flagged,
        }
    )


def backup_event_line(row: tuple) -> bytes:
    """One history line of a backup, for a row of selectors.EVENT_EXPORT_FIELDS."""
    (owner, uid, key, action, version, value_before, value_after, kind_before, kind_after, meta_before, meta_after,
     privacy_before, privacy_after, created_before, entries_erased, actor, at, held_write) = row  # fmt: skip
    return _json_line(
        {
            "line": EVENT_LINE,
            "owner": owner,
            "uid": uid,
            "key": key,
            "action": action,
            "version": version,
            "value_before": value_before,
            "value_after": value_after,
            "kind_before": kind_before,
            "kind_after": kind_after,
            "meta_before": meta_before,
            "meta_after": meta_after,
            "privacy_before": privacy_before,
            "privacy_after": privacy_after,
            "created_before": _moment(created_before),
            "entries_erased": entries_erased,
            "actor": actor,
            "at": at.isoformat(),
            "held_write": held_write,
        }
    )


def backup_held_line(row: tuple) -> bytes:
    """One held line of a backup (a write the guard held, pending or decided), for a row of
    selectors.HELD_EXPORT_FIELDS. Its id names it within the backup: an event's held_write is that id."""
    (held_id, owner, uid, key, value, kind, meta, privacy, ttl, expires, clears_expiry, expected_version,
     guard_flags, requested_by, requested_at, status, decided_by, decided_at, entry_version) = row  # fmt: skip
    return _json_line(
        {
            "line": HELD_LINE,
            "id": held_id,
            "owner": owner,
            "uid": uid,
            "key": key,
            "value": value,
            "kind": kind,
            "meta": meta,
            "privacy": privacy,
            "ttl": ttl,
            "expires": _moment(expires),
            "clears_expiry": clears_expiry,
            "expected_version": expected_version,
            "guard_flags": guard_flags,
            "requested_by": requested_by,
            "requested_at": requested_at.isoformat(),
            "status": status,
            "decided_by": decided_by,
            "decided_at": _moment(decided_at),
            "entry_version": entry_version,
        }
    )


def _write(
    lines: Iterable[bytes], destination: IO[bytes], header_fields: Callable[[], dict[str, Any]]
) -> tuple[int, str]:
    """Write the header and the lines to destination, in bounded memory; returns their count and checksum.

    The lines go to a temporary file first, because the header that precedes them holds their
    count and checksum; header_fields is called once every line is written.
    """
    digest = hashlib.sha256()
    count = 0
    with tempfile.TemporaryFile() as body:
        for line in lines:
            digest.update(line)
            body.write(line)
            count += 1
        header_line = {
            "format": FORMAT_NAME,
            **header_fields(),
            "count": count,
            "sha256": digest.hexdigest(),
            "exported_at": timezone.now().isoformat(),
        }
        destination.write(json.dumps(header_line, separators=(",", ":")).encode("utf-8") + b"\n")
        body.seek(0)
        shutil.copyfileobj(body, destination, COPY_BUFFER_BYTES)
    return count, digest.hexdigest()


class _LocalCount:
    """Counts the local entries among export rows as they stream by, for the header."""

    def __init__(self) -> None:
        self.local = 0

    def __call__(self, rows: Iterable[tuple]) -> Iterator[tuple]:
        for row in rows:
            self.local += row[EXPORT_PRIVACY_INDEX] == Privacy.LOCAL
            yield row


def write_export(rows: Iterable[tuple], destination: IO[bytes]) -> ExportHeader:
    """Write the header and one entry line per row to destination (format version 1)."""
    counted = _LocalCount()
    count, checksum = _write(
        (entry_line(row) for row in counted(rows)),
        destination,
        lambda: {"format_version": FORMAT_VERSION, "local": counted.local},
    )
    return ExportHeader(format_version=FORMAT_VERSION, count=count, sha256=checksum, local=counted.local)


def write_backup(
    entry_rows: Iterable[tuple],
    event_rows: Iterable[tuple],
    destination: IO[bytes],
    policy_rows: Iterable[tuple] = (),
    held_rows: Iterable[tuple] = (),
) -> ExportHeader:
    """Write a backup with history (format version 2): the account policies, the writes the guard held
    (pending or decided), the entries, then every history event, oldest first."""
    counted = {"entries": 0, "events": 0, "policies": 0, "held": 0}
    local = _LocalCount()

    def lines() -> Iterator[bytes]:
        for row in policy_rows:
            counted["policies"] += 1
            yield backup_policy_line(row)
        for row in held_rows:
            counted["held"] += 1
            yield backup_held_line(row)
        for row in local(entry_rows):
            counted["entries"] += 1
            yield backup_entry_line(row)
        for row in event_rows:
            counted["events"] += 1
            yield backup_event_line(row)

    count, checksum = _write(
        lines(), destination, lambda: {"format_version": HISTORY_FORMAT_VERSION, **counted, "local": local.local}
    )
    return ExportHeader(
        format_version=HISTORY_FORMAT_VERSION,
        count=count,
        sha256=checksum,
        entries=counted["entries"],
        events=counted["events"],
        local=local.local,
        policies=counted["policies"],
        held=counted["held"],
    )


def read_header(source: IO[bytes]) -> ExportHeader:
    """Parse the first line of an export file; raises ExportFileError if it is not one."""
    first = source.readline()
    try:
        header = json.loads(first)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise ExportFileError("the first line is not a JSON header") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise ExportFileError(f"the header does not name the format {FORMAT_NAME!r}")
    format_version = header.get("format_version")
    if format_version not in READABLE_FORMAT_VERSIONS or isinstance(format_version, bool):
        raise ExportFileError(
            f"format_version {format_version!r} is not one this hub reads "
            f"({FORMAT_VERSION}, or {HISTORY_FORMAT_VERSION} with history)"
        )
    count, checksum = header.get("count"), header.get("sha256")
    if type(count) is not int or count < 0 or not isinstance(checksum, str):
        raise ExportFileError("the header needs a count (a whole number) and a sha256 (hex text)")
    for name in ("entries", "events", "local", "policies", "held"):
        if name in header and not _is_count(header[name]):
            raise ExportFileError(f"the header's {name!r} must be a whole number")
    return ExportHeader(
        format_version=format_version,
        count=count,
        sha256=checksum,
        entries=header.get("entries"),
        events=header.get("events"),
        local=header.get("local", 0),
        policies=header.get("policies"),
        held=header.get("held"),
    )


def _is_count(value: object) -> bool:
    """A whole number of at least 0; not a boolean, which Python counts as an int."""
    return type(value) is int and value >= 0


def verify(path: Path) -> ExportHeader:
    """Check that the lines after the header match its count and checksum; raises ExportFileError."""
    digest = hashlib.sha256()
    count = 0
    with path.open("rb") as source:
        header = read_header(source)
        for line in source:
            digest.update(line)
            count += 1
    if count != header.count:
        kind = "lines" if header.with_history else "entries"
        raise ExportFileError(f"the header says {header.count} {kind}; the file holds {count}")
    if digest.hexdigest() != header.sha256:
        raise ExportFileError("the entries do not match the header's sha256: the file was changed or cut short")
    return header


def _timestamp(entry: dict[str, Any], name: str) -> datetime | None:
    raw = entry.get(name)
    if raw is None:
        return None
    if not isinstance(raw, str):
        raise InvalidField(name, "must be an ISO 8601 date and time with a time zone.")
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        raise InvalidField(name, "must be an ISO 8601 date and time with a time zone.") from None
    return check_moment_in_range(name, moment)


def _json_object(line: bytes) -> dict[str, Any]:
    """The JSON object on one line; raises InvalidField when the line is not UTF-8 or not a JSON object."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InvalidField("line", f"is not UTF-8 text (byte {error.start + 1} is not).") from None
    try:
        content = json.loads(text)
    except json.JSONDecodeError:
        raise InvalidField("line", "is not a JSON object.") from None
    except (ValueError, RecursionError):
        # A number of more digits than Python reads (4,300), or arrays or objects nested thousands deep.
        raise InvalidField("line", "is a JSON object nested too deeply or with a number too long to read.") from None
    if not isinstance(content, dict):
        raise InvalidField("line", "is not a JSON object.")
    return content


def parse_line(line: bytes) -> tuple[str | None, ImportRecord]:
    """The owner's username (or None) and the record on one entry line; raises InvalidField.

    Field values are checked by services.entries_import; this only maps JSON to a record.
    """
    return _entry_record(_json_object(line))


# What an entry line holds (entry_line writes them; a backup's entry line adds "line", taken in either file): any
# other name is a misspelling, which left unread would store the entry otherwise than meant (a misspelt
# "privacy" shared it).
ENTRY_LINE_FIELDS = (
    *("owner", "uid", "key", "value", "kind", "meta", "privacy"),
    *("created", "updated", "version", "expires"),
)


def _entry_record(entry: dict[str, Any]) -> tuple[str | None, ImportRecord]:
    for required in ("uid", "key", "value"):
        if required not in entry:
            raise InvalidField(required, "is required.")
    unknown = [name for name in entry if name not in ENTRY_LINE_FIELDS and name != "line"]
    if unknown:
        raise InvalidField(str(unknown[0]), f"is no field of an entry line; it takes {', '.join(ENTRY_LINE_FIELDS)}.")
    owner = entry.get("owner")
    if owner is not None and not isinstance(owner, str):
        raise InvalidField("owner", "must be a username.")
    record = ImportRecord(
        uid=entry["uid"],
        key=entry["key"],
        value=entry["value"],
        kind=entry.get("kind", DEFAULT_KIND),
        meta=entry.get("meta", {}),
        privacy=entry.get("privacy"),
        created=_timestamp(entry, "created"),
        updated=_timestamp(entry, "updated"),
        version=entry.get("version"),
        expires=_timestamp(entry, "expires"),
    )
    return owner, record


def _required_timestamp(content: dict[str, Any], name: str) -> datetime:
    moment = _timestamp(content, name)
    if moment is None:
        raise InvalidField(name, "is required.")
    return moment


def _require(content: dict, *names: str) -> None:
    """InvalidField naming the first of names content lacks."""
    for name in names:
        if name not in content:
            raise InvalidField(name, "is required.")


def parse_backup_line(line: bytes) -> RestoreEntry | RestoreEvent | RestorePolicy | RestoreHeld:
    """The record on one line of a backup with history (a policy, a held write, an entry or an event); raises
    InvalidField.

    Field values are checked by services.history_restore; this only maps JSON to a record.
    """
    content = _json_object(line)
    kind = content.get("line")
    if kind not in BACKUP_LINES:
        raise InvalidField("line", f"must be one of {', '.join(repr(name) for name in BACKUP_LINES)}.")
    if not isinstance(content.get("owner"), str):
        raise InvalidField("owner", "is required: a username.")
    if kind == POLICY_LINE:
        _require(content, "default_privacy", "guard_mode", "context_includes_flagged")
        return RestorePolicy(
            owner=content["owner"],
            default_privacy=content["default_privacy"],
            guard_mode=content["guard_mode"],
            context_includes_flagged=content["context_includes_flagged"],
        )
    if kind == ENTRY_LINE:
        _, record = _entry_record(content)
        return RestoreEntry(owner=content["owner"], record=record)
    if kind == HELD_LINE:
        _require(content, "id", "uid", "key", "value", "guard_flags", "requested_at", "status")
        return RestoreHeld(
            backup_id=content["id"],
            owner=content["owner"],
            uid=content["uid"],
            key=content["key"],
            value=content["value"],
            kind=content.get("kind"),
            meta=content.get("meta"),
            privacy=content.get("privacy"),
            ttl=content.get("ttl"),
            expires=_timestamp(content, "expires"),
            clears_expiry=content.get("clears_expiry", False),
            expected_version=content.get("expected_version"),
            guard_flags=content["guard_flags"],
            requested_by=content.get("requested_by"),
            requested_at=_required_timestamp(content, "requested_at"),
            status=content["status"],
            decided_by=content.get("decided_by"),
            decided_at=_timestamp(content, "decided_at"),
            entry_version=content.get("entry_version"),
        )
    _require(content, "uid", "key", "action", "version", "at")
    return RestoreEvent(
        owner=content["owner"],
        uid=content["uid"],
        key=content["key"],
        action=content["action"],
        version=content["version"],
        value_before=content.get("value_before"),
        value_after=content.get("value_after"),
        kind_before=content.get("kind_before"),
        kind_after=content.get("kind_after"),
        meta_before=content.get("meta_before"),
        meta_after=content.get("meta_after"),
        privacy_before=content.get("privacy_before"),
        privacy_after=content.get("privacy_after"),
        created_before=_timestamp(content, "created_before"),
        entries_erased=content.get("entries_erased"),
        actor=content.get("actor"),
        at=_required_timestamp(content, "at"),
        held_write=content.get("held_write"),
    )


def entry_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """(line number, line) for each entry line of the file, after its header."""
    with path.open("rb") as source:
        source.readline()
        yield from enumerate(source, start=2)
