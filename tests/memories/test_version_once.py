"""No two creates or updates of a key share a version: the database refuses a second one (memory_event_version_once),
the migration that brings that rule leaves older history as it was, and the imports never write one."""

import hashlib
import importlib
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from memories import services
from memories.models import MemoryEntry, MemoryEvent
from memories.services import entries

MIGRATION = importlib.import_module("memories.migrations.0024_event_version_once")


def _event(owner, *, action: str, version: int, value: str | None = "tea", key: str = "drink") -> MemoryEvent:
    return MemoryEvent.objects.create(
        owner=owner, uid="alice", key=key, action=action, version=version, value_after=value, at=timezone.now()
    )


def test_a_second_create_or_update_at_a_version_is_refused_by_the_database(owner):
    _event(owner, action="create", version=1)
    for action in ("create", "update"):
        with pytest.raises(IntegrityError) as refused, transaction.atomic():
            _event(owner, action=action, version=1, value="coffee")
        assert entries.version_taken(refused.value)
    # A delete, an expiry or a rejection records the version it removed or left: those repeat it.
    for action in ("delete", "reject"):
        _event(owner, action=action, version=1, value=None)
    # Another key, or the next version, is free.
    _event(owner, action="create", version=1, key="food")
    _event(owner, action="update", version=2)
    assert MemoryEvent.objects.filter(owner=owner).count() == 5


@pytest.mark.django_db(transaction=True)
def test_the_migration_leaves_history_that_repeats_a_version_and_guards_what_follows(owner):
    def index_drop() -> None:
        with connection.schema_editor() as editor:
            MIGRATION._index_drop(None, editor)

    def index_create() -> None:
        with connection.schema_editor() as editor:
            MIGRATION._index_create(None, editor)

    index_drop()
    try:
        # History written before the rule, by the race the rule closes: two creates at version 2.
        _event(owner, action="create", version=1)
        _event(owner, action="delete", version=1, value=None)
        _event(owner, action="create", version=2, value="black")
        _event(owner, action="delete", version=2, value=None)
        _event(owner, action="create", version=2, value="oolong")
        index_create()
        assert list(MemoryEvent.objects.filter(owner=owner, version=2).values_list("action", "value_after")) == [
            ("create", "black"),
            ("delete", None),
            ("create", "oolong"),
        ]
        # From here on, the rule holds: for the key that repeats a version and for any other.
        _event(owner, action="update", version=3, value="green")
        for key in ("drink", "food"):
            _event(owner, action="create", version=7, key=key)
            with pytest.raises(IntegrityError), transaction.atomic():
                _event(owner, action="update", version=7, key=key)
        with pytest.raises(IntegrityError), transaction.atomic():
            _event(owner, action="update", version=3, value="sencha")
    finally:
        MemoryEvent.objects.all().delete()
        index_drop()
        index_create()
    _event(owner, action="create", version=1)
    with pytest.raises(IntegrityError), transaction.atomic():
        _event(owner, action="create", version=1)


def test_an_import_of_an_entry_lost_with_its_history_kept_adds_no_event(owner, tmp_path: Path):
    services.entry_put(owner=owner, uid="alice", key="editor", value="vim")
    services.entry_put(owner=owner, uid="alice", key="editor", value="emacs")
    services.entry_put(owner=owner, uid="alice", key="shell", value="zsh")
    backup = tmp_path / "backup.jsonl"
    call_command("export_memories", str(backup))
    MemoryEntry.objects.all().delete()
    services.entry_put(owner=owner, uid="alice", key="shell", value="fish")
    call_command("import_memories", str(backup), "--quiet")
    history = list(MemoryEvent.objects.filter(owner=owner).order_by("id").values_list("key", "action", "version"))
    # editor comes back at 2, the state its history's latest event holds; shell, changed since, goes on to 3.
    assert history == [
        ("editor", "create", 1),
        ("editor", "update", 2),
        ("shell", "create", 1),
        ("shell", "create", 2),
        ("shell", "update", 3),
    ]
    assert dict(MemoryEntry.objects.filter(owner=owner).values_list("key", "version")) == {"editor": 2, "shell": 3}


@pytest.mark.django_db(transaction=True)
def test_an_export_warns_of_history_that_repeats_a_version(owner, tmp_path: Path, capsys):
    with connection.schema_editor() as editor:
        MIGRATION._index_drop(None, editor)
    try:
        _event(owner, action="create", version=1)
        _event(owner, action="update", version=1, value="coffee")
        call_command("export_memories", str(tmp_path / "backup.jsonl"), with_history=True)
        err = capsys.readouterr().err
        assert "Warning: the history repeats a version of a key (owner/alice/drink version 1)" in err
        assert "import_memories refuses the second event of each such version" in err
    finally:
        MemoryEvent.objects.all().delete()
        with connection.schema_editor() as editor:
            MIGRATION._index_drop(None, editor)
            MIGRATION._index_create(None, editor)
    call_command("export_memories", str(tmp_path / "clean.jsonl"), with_history=True)
    assert "Warning" not in capsys.readouterr().err


def test_a_backup_whose_history_repeats_a_version_is_refused_by_its_line(owner, tmp_path: Path, capsys):
    services.entry_put(owner=owner, uid="alice", key="editor", value="vim")
    services.entry_put(owner=owner, uid="alice", key="editor", value="emacs")
    backup = tmp_path / "backup.jsonl"
    call_command("export_memories", str(backup), with_history=True)
    header, *lines = backup.read_text().splitlines()
    # A second update at version 2, as the race that the database now refuses could have written.
    update = next(line for line in lines if json.loads(line).get("action") == "update")
    lines.append(json.dumps(json.loads(update) | {"value_after": "nano", "value_before": "emacs"}))
    body = "".join(f"{line}\n" for line in lines).encode()
    header_fields = json.loads(header) | {
        "events": 3,
        "count": len(lines),
        "sha256": hashlib.sha256(body).hexdigest(),
    }
    backup.write_bytes(json.dumps(header_fields).encode() + b"\n" + body)
    MemoryEntry.objects.all().delete()
    MemoryEvent.objects.all().delete()
    capsys.readouterr()
    with pytest.raises(CommandError, match="nothing was restored"):
        call_command("import_memories", str(backup), quiet=True)
    out = capsys.readouterr().out
    assert (
        f"line {len(lines) + 1}: version: 'editor' has an earlier create or update event at version 2: "
        "a version names one state of a key." in out
    )
    assert MemoryEntry.objects.count() == 0 and MemoryEvent.objects.count() == 0
