import pytest
from django.db import DatabaseError, connection

from memories import selectors, services
from memories.models import MemoryEntry, MemoryEvent
from memories.services import entries
from memories.validation import InvalidField


def _history(owner, uid="alice", key="language"):
    return list(selectors.entry_history(owner=owner, uid=uid, key=key).order_by("id"))


def test_a_first_put_creates_the_entry_at_version_one(owner):
    result = services.entry_put(owner=owner, uid="alice", key="language", value="prefers Python")

    assert result.created and result.changed
    assert result.entry.version == 1
    assert result.entry.kind == "preference"
    assert result.entry.meta == {}
    [event] = _history(owner)
    assert (event.action, event.version, event.value_before, event.value_after) == ("create", 1, None, "prefers Python")
    assert event.actor == owner


def test_a_changing_put_bumps_the_version_and_records_before_and_after(owner):
    services.entry_put(owner=owner, uid="alice", key="language", value="prefers Python", kind="fact")
    result = services.entry_put(owner=owner, uid="alice", key="language", value="prefers Rust", meta={"source": "chat"})

    assert not result.created and result.changed
    assert result.entry.version == 2
    assert result.entry.kind == "fact", "a put without kind keeps the entry's kind"
    update = _history(owner)[-1]
    assert (update.action, update.version) == ("update", 2)
    assert (update.value_before, update.value_after) == ("prefers Python", "prefers Rust")
    assert (update.meta_before, update.meta_after) == ({}, {"source": "chat"})
    assert (update.kind_before, update.kind_after) == ("fact", "fact")


def test_a_put_that_changes_nothing_records_nothing(owner):
    services.entry_put(owner=owner, uid="alice", key="language", value="prefers Python")
    result = services.entry_put(owner=owner, uid="alice", key="language", value="prefers Python", kind="preference")

    assert not result.created and not result.changed
    assert result.entry.version == 1
    assert len(_history(owner)) == 1


def test_entries_are_unique_per_owner_uid_and_key(owner, stranger):
    services.entry_put(owner=owner, uid="alice", key="language", value="Python")
    services.entry_put(owner=stranger, uid="alice", key="language", value="Go")
    services.entry_put(owner=owner, uid="bob", key="language", value="Ruby")

    assert MemoryEntry.objects.count() == 3
    assert selectors.entry_get(owner=owner, uid="alice", key="language").value == "Python"
    assert selectors.entry_get(owner=stranger, uid="alice", key="language").value == "Go"


def test_update_changes_only_the_given_fields_and_needs_an_existing_entry(owner):
    services.entry_put(owner=owner, uid="alice", key="language", value="Python", meta={"a": 1})
    result = services.entry_update(owner=owner, uid="alice", key="language", kind="fact")

    assert (result.entry.value, result.entry.kind, result.entry.meta, result.entry.version) == (
        "Python",
        "fact",
        {"a": 1},
        2,
    )
    with pytest.raises(services.EntryNotFound):
        services.entry_update(owner=owner, uid="alice", key="missing", value="x")


def test_delete_removes_the_entry_and_keeps_its_history(owner):
    services.entry_put(owner=owner, uid="alice", key="language", value="Python")
    deleted = services.entry_delete(owner=owner, uid="alice", key="language")

    assert deleted.value == "Python"
    assert selectors.entry_get(owner=owner, uid="alice", key="language") is None
    actions = [event.action for event in _history(owner)]
    assert actions == ["create", "delete"]
    assert _history(owner)[-1].value_before == "Python"
    assert services.entry_delete(owner=owner, uid="alice", key="language") is None
    assert len(_history(owner)) == 2, "deleting what is gone records nothing"


def test_forget_deletes_every_entry_of_one_user_only(owner, stranger):
    for key in ("a", "b", "c"):
        services.entry_put(owner=owner, uid="alice", key=key, value=key)
    services.entry_put(owner=owner, uid="bob", key="a", value="stays")
    services.entry_put(owner=stranger, uid="alice", key="a", value="stays too")

    assert services.user_forget(owner=owner, uid="alice") == 3

    assert not selectors.uid_exists(owner=owner, uid="alice")
    assert selectors.entry_get(owner=owner, uid="bob", key="a").value == "stays"
    assert selectors.entry_get(owner=stranger, uid="alice", key="a").value == "stays too"
    assert MemoryEvent.objects.filter(owner=owner, uid="alice", action="delete").count() == 3
    assert services.user_forget(owner=owner, uid="alice") == 0


def test_a_stale_expected_version_changes_nothing(owner):
    services.entry_put(owner=owner, uid="alice", key="language", value="Python")
    services.entry_put(owner=owner, uid="alice", key="language", value="Rust")

    with pytest.raises(services.VersionConflict) as conflict:
        services.entry_put(owner=owner, uid="alice", key="language", value="Go", expected_version=1)

    assert conflict.value.current == 2
    assert selectors.entry_get(owner=owner, uid="alice", key="language").value == "Rust"


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"uid": ""}, "uid"),
        ({"uid": "u" * 256}, "uid"),
        ({"uid": "a\x07b"}, "uid"),
        ({"key": ""}, "key"),
        ({"key": "k" * 256}, "key"),
        ({"key": "line\nbreak"}, "key"),
        ({"value": "v" * (64 * 1024 + 1)}, "value"),
        ({"value": "nul\x00byte"}, "value"),
        ({"kind": "has space"}, "kind"),
        ({"kind": "k" * 33}, "kind"),
        ({"meta": ["not", "an", "object"]}, "meta"),
        ({"meta": {"blob": "m" * 16 * 1024}}, "meta"),
    ],
)
def test_bad_input_is_refused_naming_the_field_and_nothing_is_written(owner, arguments, field):
    call = {"owner": owner, "uid": "alice", "key": "language", "value": "Python", **arguments}

    with pytest.raises(InvalidField) as error:
        services.entry_put(**call)

    assert error.value.field == field
    assert not MemoryEntry.objects.exists()
    assert not MemoryEvent.objects.exists()


def test_a_value_of_exactly_the_limit_is_accepted(owner, settings):
    settings.MEMORYHUB_MAX_VALUE_BYTES = 10
    services.entry_put(owner=owner, uid="alice", key="k", value="é" * 5)  # 10 bytes in UTF-8

    with pytest.raises(InvalidField, match="at most 10 bytes"):
        services.entry_put(owner=owner, uid="alice", key="k", value="é" * 5 + "x")


def test_a_failure_while_recording_history_leaves_the_entry_untouched(owner):
    services.entry_put(owner=owner, uid="alice", key="language", value="Python")
    history_table = connection.ops.quote_name(MemoryEvent._meta.db_table)

    def disk_full_on_history(execute, sql, params, many, context):
        # The database refuses the history row, however the service writes it.
        if f"INSERT INTO {history_table}" in sql:
            raise DatabaseError("disk full")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(disk_full_on_history):
        with pytest.raises(DatabaseError):
            services.entry_put(owner=owner, uid="alice", key="language", value="Rust")
        with pytest.raises(DatabaseError):
            services.entry_put(owner=owner, uid="alice", key="new", value="x")

    entry = selectors.entry_get(owner=owner, uid="alice", key="language")
    assert (entry.value, entry.version) == ("Python", 1)
    assert selectors.entry_get(owner=owner, uid="alice", key="new") is None


def test_a_put_that_meets_a_concurrent_create_of_its_key_applies_on_top_of_it(owner, monkeypatch):
    services.entry_put(owner=owner, uid="alice", key="language", value="Python")
    real_read = entries._locked_entry
    reads = []

    def read_before_the_other_writer(**kwargs):
        # The first read misses the entry, as it does when another writer creates it just after (PostgreSQL).
        reads.append(kwargs["key"])
        return None if len(reads) == 1 else real_read(**kwargs)

    monkeypatch.setattr(entries, "_locked_entry", read_before_the_other_writer)
    result = services.entry_put(owner=owner, uid="alice", key="language", value="Rust")

    assert (result.created, result.entry.value, result.entry.version) == (False, "Rust", 2)
    assert MemoryEntry.objects.filter(owner=owner, uid="alice", key="language").count() == 1
    assert list(MemoryEvent.objects.filter(key="language").order_by("id").values_list("action", "version")) == [
        ("create", 1),
        ("update", 2),
    ]


def test_a_put_that_meets_a_key_created_and_removed_again_by_others_creates_it_after_them(owner, monkeypatch):
    real_insert = entries._created
    inserts = []

    def others_create_and_remove_it_first(entry, **kwargs):
        # Between this put's read and its insert, other writers create the key and delete it again (PostgreSQL):
        # the insert meets their entry, and the read after it finds the key gone.
        inserts.append(entry.version)
        if len(inserts) == 1:
            monkeypatch.setattr(entries, "_created", real_insert)
            services.entry_put(owner=owner, uid="alice", key="language", value="theirs")
            services.entry_delete(owner=owner, uid="alice", key="language")
            return False
        return real_insert(entry, **kwargs)

    monkeypatch.setattr(entries, "_created", others_create_and_remove_it_first)
    result = services.entry_put(owner=owner, uid="alice", key="language", value="Rust")

    assert (result.created, result.entry.value, result.entry.version) == (True, "Rust", 2)
    assert list(MemoryEvent.objects.filter(key="language").order_by("id").values_list("action", "version")) == [
        ("create", 1),
        ("delete", 1),
        ("create", 2),
    ]


def test_a_create_only_put_that_meets_a_concurrent_create_of_its_key_is_refused(owner, monkeypatch):
    services.entry_put(owner=owner, uid="alice", key="language", value="Python")
    real_read = entries._locked_entry
    reads = []

    def read_before_the_other_writer(**kwargs):
        # The first read misses the entry, as it does when another writer creates it just after (PostgreSQL).
        reads.append(kwargs["key"])
        return None if len(reads) == 1 else real_read(**kwargs)

    monkeypatch.setattr(entries, "_locked_entry", read_before_the_other_writer)
    with pytest.raises(services.VersionConflict) as conflict:
        services.entry_put(
            owner=owner, uid="alice", key="language", value="Rust", expected_version=services.ABSENT_VERSION
        )

    assert conflict.value.current == 1
    entry = selectors.entry_get(owner=owner, uid="alice", key="language")
    assert (entry.value, entry.version) == ("Python", 1)
    assert list(MemoryEvent.objects.filter(key="language").values_list("action", flat=True)) == ["create"]
