"""The export file: versioned JSONL that export_memories writes and import_memories reads.

Line 1 is the header, a JSON object:
    {"format": "memoryhub.memories", "format_version": 1, "count": N, "sha256": "...", "exported_at": "..."}
Then N lines, one entry each:
    {"owner": "alice", "uid": "...", "key": "...", "value": "...", "kind": "...", "meta": {...},
     "created": "2026-11-29T22:57:57.123456+00:00", "updated": "...", "version": 3}
sha256 is the hex digest of every byte after the header line, so a truncated or edited file is
refused before anything is imported. Timestamps are ISO 8601 with microseconds and a time zone.
"""

import hashlib
import json
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from django.utils import timezone

from memories.models import DEFAULT_KIND
from memories.services import ImportRecord
from memories.validation import InvalidField

FORMAT_NAME = "memoryhub.memories"
FORMAT_VERSION = 1
COPY_BUFFER_BYTES = 1024 * 1024


class ExportFileError(ValueError):
    """The file is not a MemoryHub export this version can read, or it does not match its header."""


@dataclass(frozen=True)
class ExportHeader:
    format_version: int
    count: int
    sha256: str


def entry_line(row: tuple) -> bytes:
    """One export line for a row of selectors.EXPORT_FIELDS."""
    owner, uid, key, value, kind, meta, created, updated, version = row
    entry = {
        "owner": owner,
        "uid": uid,
        "key": key,
        "value": value,
        "kind": kind,
        "meta": meta,
        "created": created.isoformat(),
        "updated": updated.isoformat(),
        "version": version,
    }
    return json.dumps(entry, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def write_export(rows: Iterable[tuple], destination: IO[bytes]) -> ExportHeader:
    """Write the header and one line per row to destination, in bounded memory.

    The lines go to a temporary file first, because the header that precedes them holds their
    count and checksum.
    """
    digest = hashlib.sha256()
    count = 0
    with tempfile.TemporaryFile() as body:
        for row in rows:
            line = entry_line(row)
            digest.update(line)
            body.write(line)
            count += 1
        header = ExportHeader(format_version=FORMAT_VERSION, count=count, sha256=digest.hexdigest())
        header_line = {
            "format": FORMAT_NAME,
            "format_version": header.format_version,
            "count": header.count,
            "sha256": header.sha256,
            "exported_at": timezone.now().isoformat(),
        }
        destination.write(json.dumps(header_line, separators=(",", ":")).encode("utf-8") + b"\n")
        body.seek(0)
        shutil.copyfileobj(body, destination, COPY_BUFFER_BYTES)
    return header


def read_header(source: IO[bytes]) -> ExportHeader:
    """Parse the first line of an export file; raises ExportFileError if it is not one."""
    first = source.readline()
    try:
        header = json.loads(first)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise ExportFileError("the first line is not a JSON header") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise ExportFileError(f"the header does not name the format {FORMAT_NAME!r}")
    if header.get("format_version") != FORMAT_VERSION:
        raise ExportFileError(
            f"format_version {header.get('format_version')!r} is not {FORMAT_VERSION}, the one this hub reads"
        )
    count, checksum = header.get("count"), header.get("sha256")
    if not isinstance(count, int) or count < 0 or not isinstance(checksum, str):
        raise ExportFileError("the header needs a count (a whole number) and a sha256 (hex text)")
    return ExportHeader(format_version=FORMAT_VERSION, count=count, sha256=checksum)


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
        raise ExportFileError(f"the header says {header.count} entries; the file holds {count}")
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
        return datetime.fromisoformat(raw)
    except ValueError:
        raise InvalidField(name, "must be an ISO 8601 date and time with a time zone.") from None


def parse_line(line: bytes) -> tuple[str | None, ImportRecord]:
    """The owner's username (or None) and the record on one entry line; raises InvalidField.

    Field values are checked by services.entries_import; this only maps JSON to a record.
    """
    try:
        entry = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise InvalidField("line", "is not a JSON object.") from None
    if not isinstance(entry, dict):
        raise InvalidField("line", "is not a JSON object.")
    for required in ("uid", "key", "value"):
        if required not in entry:
            raise InvalidField(required, "is required.")
    owner = entry.get("owner")
    if owner is not None and not isinstance(owner, str):
        raise InvalidField("owner", "must be a username.")
    record = ImportRecord(
        uid=entry["uid"],
        key=entry["key"],
        value=entry["value"],
        kind=entry.get("kind", DEFAULT_KIND),
        meta=entry.get("meta", {}),
        created=_timestamp(entry, "created"),
        updated=_timestamp(entry, "updated"),
        version=entry.get("version"),
    )
    return owner, record


def entry_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """(line number, line) for each entry line of the file, after its header."""
    with path.open("rb") as source:
        source.readline()
        yield from enumerate(source, start=2)
