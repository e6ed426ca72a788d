"""import_memories accounts for every line: repeated keys are applied in order, and nothing is
accepted that the hub's own next export and import would refuse."""

import hashlib
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from memories import selectors, services
from memories.models import MemoryEntry


def _write_file(path: Path, entries: list[dict]) -> Path:
    body = b"".join(json.dumps(entry).encode() + b"\n" for entry in entries)
    header = {
        "format": "memoryhub.memories",
        "format_version": 1,
        "count": len(entries),
        "sha256": hashlib.sha256(body).hexdigest(),
    }
    path.write_bytes(json.dumps(header).encode() + b"\n" + body)
    return path


def _history(owner, key: str) -> list[tuple]:
    events = selectors.entry_history(owner=owner, uid="alice", key=key).order_by("id")
    return list(events.values_list("action", "version", "value_before", "value_after"))


@pytest.mark.parametrize("chunk_size", [1, 5000])
def test_two_lines_for_one_key_are_both_applied_in_order_and_counted(owner, tmp_path, capsys, chunk_size):
    source = _write_file(
        tmp_path / "twice.jsonl",
        [
            {"owner": "owner", "uid": "alice", "key": "editor", "value": "vim"},
            {"owner": "owner", "uid": "alice", "key": "other", "value": "x"},
            {"owner": "owner", "uid": "alice", "key": "editor", "value": "emacs"},
            {"owner": "owner", "uid": "alice", "key": "editor", "value": "helix"},
        ],
    )
    call_command("import_memories", str(source), "--quiet", "--chunk-size", str(chunk_size))
    entry = selectors.entry_get(owner=owner, uid="alice", key="editor")
    assert (entry.value, entry.version) == ("helix", 3)
    assert _history(owner, "editor") == [
        ("create", 1, None, "vim"),
        ("update", 2, "vim", "emacs"),
        ("update", 3, "emacs", "helix"),
    ]
    out = capsys.readouterr().out
    assert "4 entries read: 2 were created, 2 were updated, 0 unchanged, 0 refused" in out
    if chunk_size > 1:
        assert "(2 repeated a key of an earlier line and were applied after it, in order)" in out


def test_a_dry_run_counts_repeated_lines_as_the_import_would(owner, tmp_path, capsys):
    source = _write_file(
        tmp_path / "twice.jsonl",
        [
            {"owner": "owner", "uid": "alice", "key": "editor", "value": "vim"},
            {"owner": "owner", "uid": "alice", "key": "editor", "value": "vim"},
            {"owner": "owner", "uid": "alice", "key": "editor", "value": "emacs"},
        ],
    )
    call_command("import_memories", str(source), "--quiet", "--dry-run")
    assert "1 would be created, 1 would be updated, 1 unchanged, 0 refused" in capsys.readouterr().out
    assert MemoryEntry.objects.count() == 0


def test_the_service_applies_repeated_records_in_order(owner):
    counts = services.entries_import(
        owner=owner,
        records=[
            services.ImportRecord(uid="alice", key="editor", value="vim"),
            services.ImportRecord(uid="alice", key="editor", value="emacs"),
        ],
    )
    assert (counts.created, counts.updated, counts.repeated) == (1, 1, 1)
    assert [row[3] for row in _history(owner, "editor")] == ["vim", "emacs"]


@pytest.mark.parametrize("field", ["created", "updated"])
def test_a_time_in_the_future_is_refused(owner, tmp_path, capsys, field):
    ahead = (timezone.now() + services.IMPORT_CLOCK_SKEW + timedelta(minutes=1)).isoformat()
    line = {"owner": "owner", "uid": "alice", "key": "editor", "value": "vim", "created": None, "updated": ahead}
    if field == "created":
        line["created"] = ahead
    source = _write_file(tmp_path / "future.jsonl", [line])
    with pytest.raises(CommandError, match="1 entries were refused"):
        call_command("import_memories", str(source), "--quiet")
    assert f"line 2: {field}: must not be in the future" in capsys.readouterr().out
    assert MemoryEntry.objects.count() == 0


def test_a_time_within_the_clock_skew_is_accepted(owner, tmp_path):
    ahead = (timezone.now() + timedelta(minutes=1)).isoformat()
    line = {"owner": "owner", "uid": "alice", "key": "editor", "value": "vim", "created": ahead, "updated": ahead}
    call_command("import_memories", str(_write_file(tmp_path / "skew.jsonl", [line])), "--quiet")
    assert MemoryEntry.objects.count() == 1


def test_a_version_that_leaves_no_room_to_change_is_refused(owner, tmp_path, capsys):
    moment = datetime(2026, 1, 1, tzinfo=UTC).isoformat()
    common = {"owner": "owner", "uid": "alice", "value": "v", "created": moment, "updated": moment}
    source = _write_file(
        tmp_path / "versions.jsonl",
        [
            {**common, "key": "full", "version": services.IMPORT_MAX_VERSION + 1},
            {**common, "key": "room", "version": services.IMPORT_MAX_VERSION},
        ],
    )
    with pytest.raises(CommandError, match="1 entries were refused"):
        call_command("import_memories", str(source), "--quiet")
    assert f"line 2: version: must be a whole number from 1 to {services.IMPORT_MAX_VERSION}" in capsys.readouterr().out
    # The hub's export of the one accepted imports again, and the entry can still change once more.
    backup = tmp_path / "again.jsonl"
    call_command("export_memories", str(backup))
    MemoryEntry.objects.all().delete()
    call_command("import_memories", str(backup), "--quiet")
    assert selectors.entry_get(owner=owner, uid="alice", key="room").version == services.IMPORT_MAX_VERSION
    assert services.entry_put(owner=owner, uid="alice", key="room", value="w").entry.version == (
        services.IMPORT_MAX_VERSION + 1
    )


def test_lines_the_hub_could_not_read_back_are_refused_by_line_and_field(owner, tmp_path, capsys):
    valid = {"owner": "owner", "uid": "alice", "key": "ok", "value": "fine"}
    years_ahead = (timezone.now() + timedelta(days=11 * 365)).isoformat()
    lines = [
        valid,
        # A time of year 0 in UTC: PostgreSQL would store it, and no read, delete, erasure or export could give it back.
        {**valid, "key": "early", "created": "0001-01-01T00:00:00+14:00", "updated": "0001-01-01T00:00:00+14:00"},
        {**valid, "key": "late", "expires": "9999-12-31T23:00:00-05:00"},
        {**valid, "key": "far", "expires": years_ahead},
        # A misspelt field would be left unread: "privcy" would store the memory shared.
        {**valid, "key": "misspelt", "privcy": "local"},
    ]
    start = b'{"owner": "owner", "uid": "alice", "value": "v", '
    body = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    body += start + b'"key": "deep", "meta": ' + b"[" * 30000 + b"]" * 30000 + b"}\n"
    body += start + b'"key": "long", "meta": {"n": ' + b"9" * 5000 + b"}}\n"
    header = {"format": "memoryhub.memories", "format_version": 1, "count": len(lines) + 2}
    header["sha256"] = hashlib.sha256(body).hexdigest()
    source = tmp_path / "hostile.jsonl"
    source.write_bytes(json.dumps(header).encode() + b"\n" + body)
    with pytest.raises(CommandError, match="6 entries were refused"):
        call_command("import_memories", str(source), "--quiet")
    out = capsys.readouterr().out
    assert "line 3: created: is out of range" in out
    assert "line 4: expires: is out of range" in out
    assert "line 5: expires: must be at most 315360000 seconds ahead" in out
    assert "line 6: privcy: is no field of an entry line" in out
    assert "line 7: line: is a JSON object nested too deeply or with a number too long to read" in out
    assert "line 8: line: is a JSON object nested too deeply or with a number too long to read" in out
    assert [entry.key for entry in selectors.entry_list(owner=owner, uid="alice")] == ["ok"]
