"""export_memories and import_memories: a backup that restores exactly, and refuses what it should."""

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from memories import selectors, services
from memories.models import MemoryEntry, MemoryEvent
from memories.search.lexical import POSTGRES_SEARCH_INDEXES

FIELDS = ("owner__username", "uid", "key", "value", "kind", "meta", "privacy", "created", "updated", "version")


def _snapshot() -> list[tuple]:
    return sorted(MemoryEntry.objects.values_list(*FIELDS))


def _seed(owner, stranger) -> None:
    services.entry_put(
        owner=owner, uid="alice", key="language", value="Python", kind="fact", meta={"source": "chat", "n": [1, 2]}
    )
    services.entry_put(owner=owner, uid="alice", key="language", value="Python 3.11")
    services.entry_put(owner=owner, uid="discord:1234", key="tone", value="answers in Français ✓\nwith a newline")
    services.entry_put(owner=stranger, uid="bob", key="editor", value="vim", kind="preference")


def test_a_round_trip_loses_nothing(owner, stranger, tmp_path: Path):
    _seed(owner, stranger)
    before = _snapshot()
    backup = tmp_path / "backup.jsonl"
    call_command("export_memories", str(backup))
    MemoryEntry.objects.all().delete()
    call_command("import_memories", str(backup))
    assert _snapshot() == before
    restored = selectors.entry_get(owner=owner, uid="alice", key="language")
    assert restored.version == 2 and restored.meta == {"source": "chat", "n": [1, 2]}


def test_the_header_holds_the_format_version_count_and_checksum(owner, stranger, tmp_path: Path):
    _seed(owner, stranger)
    backup = tmp_path / "backup.jsonl"
    call_command("export_memories", str(backup))
    header, *lines = backup.read_bytes().splitlines(keepends=True)
    header = json.loads(header)
    assert (header["format"], header["format_version"], header["count"]) == ("memoryhub.memories", 1, 3)
    assert header["sha256"] == hashlib.sha256(b"".join(lines)).hexdigest()


def test_importing_the_same_file_again_changes_nothing(owner, stranger, tmp_path: Path, capsys):
    _seed(owner, stranger)
    backup = tmp_path / "backup.jsonl"
    call_command("export_memories", str(backup))
    events_before = MemoryEvent.objects.count()
    before = _snapshot()
    call_command("import_memories", str(backup))
    assert "0 were created, 0 were updated, 3 unchanged" in capsys.readouterr().out
    assert _snapshot() == before
    assert MemoryEvent.objects.count() == events_before


def test_an_import_over_a_changed_entry_updates_it_forward_and_records_it(owner, stranger, tmp_path: Path):
    _seed(owner, stranger)
    backup = tmp_path / "backup.jsonl"
    call_command("export_memories", str(backup), owner="owner")
    for value in ("Rust", "Go", "Zig"):
        services.entry_put(owner=owner, uid="alice", key="language", value=value)
    call_command("import_memories", str(backup))
    entry = selectors.entry_get(owner=owner, uid="alice", key="language")
    assert (entry.value, entry.version) == ("Python 3.11", 6)
    event = selectors.entry_history(owner=owner, uid="alice", key="language").first()
    assert (event.action, event.value_before, event.value_after, event.version) == ("update", "Zig", "Python 3.11", 6)


def test_a_dry_run_reports_and_writes_nothing(owner, stranger, tmp_path: Path, capsys):
    _seed(owner, stranger)
    backup = tmp_path / "backup.jsonl"
    call_command("export_memories", str(backup))
    MemoryEntry.objects.filter(uid="alice").delete()
    call_command("import_memories", str(backup), dry_run=True)
    assert "1 would be created, 0 would be updated, 2 unchanged" in capsys.readouterr().out
    assert MemoryEntry.objects.filter(uid="alice").count() == 0


def test_a_changed_or_cut_file_is_refused_before_anything_is_written(owner, stranger, tmp_path: Path):
    _seed(owner, stranger)
    backup = tmp_path / "backup.jsonl"
    call_command("export_memories", str(backup))
    MemoryEntry.objects.all().delete()
    content = backup.read_bytes()
    backup.write_bytes(content.replace(b"Python 3.11", b"Python 3.12"))
    with pytest.raises(CommandError, match="sha256"):
        call_command("import_memories", str(backup))
    backup.write_bytes(content.rsplit(b"\n", 2)[0] + b"\n")
    with pytest.raises(CommandError, match="says 3 entries"):
        call_command("import_memories", str(backup))
    assert MemoryEntry.objects.count() == 0


def _write_file(path: Path, entries: list[dict | str]) -> None:
    body = b"".join(json.dumps(entry).encode() + b"\n" for entry in entries)
    header = {
        "format": "memoryhub.memories",
        "format_version": 1,
        "count": len(entries),
        "sha256": hashlib.sha256(body).hexdigest(),
    }
    path.write_bytes(json.dumps(header).encode() + b"\n" + body)


def test_invalid_lines_are_refused_by_line_and_field_and_the_rest_imported(owner, tmp_path: Path, capsys):
    source = tmp_path / "hand-made.jsonl"
    _write_file(
        source,
        [
            {"owner": "owner", "uid": "alice", "key": "ok", "value": "fine"},
            {"owner": "owner", "uid": "alice", "key": "k" * 300, "value": "key too long"},
            {"owner": "owner", "uid": "alice", "key": "when", "value": "v", "updated": "yesterday"},
            {"owner": "nobody", "uid": "alice", "key": "whose", "value": "v"},
            {"owner": "owner", "uid": "alice", "key": "huge", "value": "v", "version": 2**40},
        ],
    )
    with pytest.raises(CommandError, match="4 entries were refused"):
        call_command("import_memories", str(source))
    out = capsys.readouterr().out
    assert "line 3: key: must be at most 255 characters" in out
    assert "line 4: updated:" in out
    assert "line 5: owner: no account named 'nobody'" in out
    assert "line 6: version: must be a whole number from 1 to 2147483646" in out
    assert [entry.key for entry in selectors.entry_list(owner=owner, uid="alice")] == ["ok"]


def test_owner_option_imports_everything_into_one_account(owner, stranger, tmp_path: Path):
    _seed(owner, stranger)
    backup = tmp_path / "backup.jsonl"
    call_command("export_memories", str(backup), owner="stranger")
    call_command("import_memories", str(backup), owner="owner")
    assert selectors.entry_get(owner=owner, uid="bob", key="editor").value == "vim"


def test_entries_without_timestamps_or_version_get_defaults(owner, tmp_path: Path):
    source = tmp_path / "minimal.jsonl"
    _write_file(source, [{"owner": "owner", "uid": "alice", "key": "k", "value": "v"}])
    moment = datetime.now(UTC)
    call_command("import_memories", str(source))
    entry = selectors.entry_get(owner=owner, uid="alice", key="k")
    assert (entry.version, entry.kind, entry.meta) == (1, "preference", {})
    assert entry.created >= moment and entry.updated == entry.created
    assert MemoryEvent.objects.get(owner=owner, key="k").action == "create"


def test_the_import_finds_imported_entries_through_search(owner, tmp_path: Path):
    source = tmp_path / "searchable.jsonl"
    _write_file(source, [{"owner": "owner", "uid": "alice", "key": "drink", "value": "green tea"}])
    call_command("import_memories", str(source))
    assert [entry.key for entry in selectors.entry_find(owner=owner, uid="alice", query_text="green")] == ["drink"]


def test_an_import_leaves_the_database_with_fresh_statistics(owner, tmp_path: Path):
    source = tmp_path / "bulk.jsonl"
    _write_file(source, [{"owner": "owner", "uid": "alice", "key": f"k{n}", "value": f"tea {n}"} for n in range(50)])
    call_command("import_memories", str(source))
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT reltuples FROM pg_class WHERE oid = 'memories_memoryentry'::regclass")
            # -1 until the table is analysed (PostgreSQL 14+).
            assert cursor.fetchone()[0] == 50
            # and no search index has a pending list left for every search to read (GIN's fast update)
            for index in POSTGRES_SEARCH_INDEXES:
                cursor.execute("SELECT gin_clean_pending_list(%s::regclass)", [index])
                assert cursor.fetchone()[0] == 0, index
    else:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_stat1'")
            assert cursor.fetchone()[0] == 1


def test_an_export_to_standard_output_reads_back(owner, stranger, tmp_path: Path, capfdbinary):
    _seed(owner, stranger)
    before = _snapshot()
    call_command("export_memories", "-")
    backup = tmp_path / "from-stdout.jsonl"
    backup.write_bytes(capfdbinary.readouterr().out)
    MemoryEntry.objects.all().delete()
    call_command("import_memories", str(backup))
    assert _snapshot() == before


def test_a_file_of_another_format_version_is_refused(owner, tmp_path: Path):
    source = tmp_path / "future.jsonl"
    source.write_text('{"format": "memoryhub.memories", "format_version": 3, "count": 0, "sha256": ""}\n')
    with pytest.raises(CommandError, match="format_version 3 is not one this hub reads"):
        call_command("import_memories", str(source))


def test_later_lines_for_the_same_entry_win_across_and_within_chunks(owner, tmp_path: Path, capsys):
    source = tmp_path / "repeats.jsonl"
    _write_file(source, [{"owner": "owner", "uid": "alice", "key": "k", "value": f"v{number}"} for number in range(5)])
    call_command("import_memories", str(source), chunk_size=2)
    entry = selectors.entry_get(owner=owner, uid="alice", key="k")
    assert entry.value == "v4"
    actions = [event.action for event in selectors.entry_history(owner=owner, uid="alice", key="k")]
    assert actions[-1] == "create" and set(actions[:-1]) == {"update"}


def test_an_export_keeps_local_entries_marks_them_and_imports_them_local(owner, stranger, tmp_path: Path):
    _seed(owner, stranger)
    services.entry_put(owner=stranger, uid="bob", key="diagnosis", value="asthma", privacy="local")
    backup = tmp_path / "backup.jsonl"
    call_command("export_memories", str(backup))
    header, *lines = backup.read_bytes().splitlines()
    marked = {json.loads(line)["key"]: json.loads(line)["privacy"] for line in lines}
    assert json.loads(header)["local"] == 1
    assert marked == {"language": "shared", "tone": "shared", "editor": "shared", "diagnosis": "local"}

    MemoryEntry.objects.all().delete()
    services.account_policy_set(account=stranger, default_privacy="shared")
    call_command("import_memories", str(backup))
    assert selectors.entry_get(owner=stranger, uid="bob", key="diagnosis").privacy == "local"


def test_a_line_without_privacy_takes_the_importing_accounts_default(owner, tmp_path: Path):
    services.entry_put(owner=owner, uid="alice", key="editor", value="vim")
    backup = tmp_path / "backup.jsonl"
    call_command("export_memories", str(backup))
    header, line = backup.read_bytes().splitlines()
    entry = json.loads(line)
    del entry["privacy"]
    body = json.dumps(entry).encode() + b"\n"
    header_fields = {**json.loads(header), "sha256": hashlib.sha256(body).hexdigest()}
    del header_fields["local"]
    backup.write_bytes(json.dumps(header_fields).encode() + b"\n" + body)
    MemoryEntry.objects.all().delete()
    services.account_policy_set(account=owner, default_privacy="local")

    call_command("import_memories", str(backup))

    assert selectors.entry_get(owner=owner, uid="alice", key="editor").privacy == "local"


def test_refused_lines_are_listed_in_line_order(owner, tmp_path: Path, capsys):
    source = tmp_path / "hand-made.jsonl"
    _write_file(
        source,
        [
            {"owner": "owner", "uid": "alice", "key": "k" * 300, "value": "refused when its chunk is written"},
            "not an object",
            {"owner": "nobody", "uid": "alice", "key": "whose", "value": "v"},
            {"uid": "alice", "value": "no key: refused as read"},
        ],
    )
    with pytest.raises(CommandError, match="4 entries were refused"):
        call_command("import_memories", str(source), quiet=True)
    numbers = [line.split(":")[0] for line in capsys.readouterr().out.splitlines() if line.startswith("  line ")]
    assert numbers == ["  line 2", "  line 3", "  line 4", "  line 5"]


def test_a_line_that_is_not_utf8_is_named_as_such(owner, tmp_path: Path, capsys):
    body = b'{"owner": "owner", "uid": "alice", "key": "k", "value": "caf\xe9"}\n'
    source = tmp_path / "latin1.jsonl"
    header = {
        "format": "memoryhub.memories",
        "format_version": 1,
        "count": 1,
        "sha256": hashlib.sha256(body).hexdigest(),
    }
    source.write_bytes(json.dumps(header).encode() + b"\n" + body)
    with pytest.raises(CommandError, match="1 entries were refused"):
        call_command("import_memories", str(source), quiet=True)
    bad_byte = body.index(0xE9) + 1
    assert f"line 2: line: is not UTF-8 text (byte {bad_byte} is not)." in capsys.readouterr().out


@pytest.mark.parametrize("field", ["count", "entries", "local"])
def test_a_header_with_true_for_a_number_is_refused(owner, tmp_path: Path, field: str):
    body = b'{"owner": "owner", "uid": "alice", "key": "k", "value": "v"}\n'
    source = tmp_path / "boolean.jsonl"
    header = {
        "format": "memoryhub.memories",
        "format_version": 1,
        "count": 1,
        "sha256": hashlib.sha256(body).hexdigest(),
    }
    source.write_bytes(json.dumps({**header, field: True}).encode() + b"\n" + body)
    with pytest.raises(CommandError, match="was not imported: the header"):
        call_command("import_memories", str(source), quiet=True)
    assert MemoryEntry.objects.count() == 0
