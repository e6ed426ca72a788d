"""The outbox: what each write queues for Honcho, in the same transaction, and nothing when sync is off."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from memories import services
from memories.accounts import probe_account
from memories.models import PROBE_UID, MemoryEntry, SyncTask

ROOT = Path(__file__).resolve().parents[3]


def test_with_sync_off_writes_queue_nothing_and_make_no_extra_query(owner, django_assert_num_queries):
    # 1. the transaction begins (a savepoint inside the test's), 2. the locked read with the key's last
    # version in its history, 3. the account's default privacy, 4. the insert (on PostgreSQL ON CONFLICT
    # DO NOTHING, for a concurrent insert of the same key), 5. the history row, 6. the mark that the
    # entry's vector is wanted, 7. the transaction ends (on PostgreSQL 5 and 6 are in 4's statement)
    with django_assert_num_queries(7 if connection.vendor == "sqlite" else 5):
        services.entry_put(owner=owner, uid="alice", key="editor", value="vim")
    # 1. the transaction begins, 2. the locked read, 3. the update, 4. the history row, 5. the vector's
    # mark (the value changed), 6. the transaction ends (on PostgreSQL 4 and 5 are in 3's statement)
    with django_assert_num_queries(6 if connection.vendor == "sqlite" else 4):
        services.entry_put(owner=owner, uid="alice", key="editor", value="helix")
    services.entry_delete(owner=owner, uid="alice", key="editor")
    assert SyncTask.objects.count() == 0


@pytest.mark.usefixtures("sync_on")
def test_with_sync_on_a_write_costs_exactly_one_more_statement(owner, django_assert_num_queries):
    # as with sync off, plus the task's INSERT ... ON CONFLICT before the transaction ends
    with django_assert_num_queries(8 if connection.vendor == "sqlite" else 6):
        services.entry_put(owner=owner, uid="alice", key="editor", value="vim")
    with django_assert_num_queries(7 if connection.vendor == "sqlite" else 5):
        services.entry_put(owner=owner, uid="alice", key="editor", value="helix")


@pytest.mark.usefixtures("sync_on")
def test_puts_updates_deletes_and_forgets_each_queue_their_entries(owner):
    services.entry_put(owner=owner, uid="alice", key="editor", value="vim")
    services.entry_update(owner=owner, uid="alice", key="editor", kind="tool")
    services.entry_put(owner=owner, uid="bob", key="a", value="1")
    services.entry_put(owner=owner, uid="bob", key="b", value="2")
    services.entry_delete(owner=owner, uid="alice", key="editor")
    services.user_forget(owner=owner, uid="bob")

    tasks = {(task.uid, task.key): task for task in SyncTask.objects.all()}
    assert set(tasks) == {("alice", "editor"), ("bob", "a"), ("bob", "b")}
    assert {task.operation for task in tasks.values()} == {SyncTask.Operation.DELETE}
    assert {task.status for task in tasks.values()} == {SyncTask.Status.PENDING}
    assert (tasks[("alice", "editor")].version, tasks[("alice", "editor")].revision) == (2, 3)


@pytest.mark.usefixtures("sync_on")
def test_changes_to_one_entry_collapse_into_one_task_at_its_newest_state(owner):
    for number in range(5):
        services.entry_put(owner=owner, uid="alice", key="editor", value=f"v{number}")
    services.entry_put(owner=owner, uid="alice", key="editor", value="v4")  # no change: nothing queued

    (task,) = SyncTask.objects.all()
    entry = MemoryEntry.objects.get()
    assert (task.session_id, task.version, task.revision, task.operation) == (entry.honcho_session_id, 5, 5, "upsert")


@pytest.mark.usefixtures("sync_on")
def test_a_write_that_fails_queues_nothing(owner):
    services.entry_put(owner=owner, uid="alice", key="editor", value="vim")
    with pytest.raises(services.VersionConflict):
        services.entry_put(owner=owner, uid="alice", key="editor", value="emacs", expected_version=7)
    assert SyncTask.objects.get().revision == 1


def test_an_entry_keeps_its_session_across_updates_and_a_recreated_key_gets_a_new_one(owner, settings):
    settings.MEMORYHUB_HONCHO_SYNC = True
    first = services.entry_put(owner=owner, uid="alice", key="editor", value="vim").entry.honcho_session_id
    assert services.entry_put(owner=owner, uid="alice", key="editor", value="helix").entry.honcho_session_id == first
    services.entry_delete(owner=owner, uid="alice", key="editor")
    second = services.entry_put(owner=owner, uid="alice", key="editor", value="nano").entry.honcho_session_id

    assert second != first
    # the old session's deletion and the new session's creation are two tasks: neither hides the other
    assert dict(SyncTask.objects.values_list("session_id", "operation")) == {first: "delete", second: "upsert"}


def test_entries_get_a_session_id_with_sync_off_too(owner):
    entry = services.entry_put(owner=owner, uid="alice", key="editor", value="vim").entry
    assert entry.honcho_session_id.startswith("mh-") and len(entry.honcho_session_id) == 35


@pytest.mark.usefixtures("sync_on")
def test_the_evaluation_probe_is_never_queued(db):
    probe = probe_account()
    services.entry_put(owner=probe, uid=PROBE_UID, key="probe-0001", value="probe value")
    services.entry_delete(owner=probe, uid=PROBE_UID, key="probe-0001")
    services.probe_data_clear(owner=probe, uid=PROBE_UID)
    assert SyncTask.objects.count() == 0


@pytest.mark.slow
def test_sync_on_without_honcho_configured_stops_the_hub_at_start_up():
    env = {key: value for key, value in os.environ.items() if not key.startswith(("HONCHO_", "DATABASE_URL"))}
    env.update(SECRET_KEY="k", MEMORYHUB_HONCHO_SYNC="on", DJANGO_SETTINGS_MODULE="memoryhub.settings")
    code = "import django; django.setup()"
    refused = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    env["HONCHO_URL"] = "http://127.0.0.1:8765"
    accepted = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )

    assert refused.returncode != 0
    assert "MEMORYHUB_HONCHO_SYNC=on needs Honcho configured" in refused.stderr
    assert accepted.returncode == 0, accepted.stderr


@pytest.mark.usefixtures("sync_on")
def test_a_restored_entry_is_queued_under_a_new_session_beside_its_deletion(owner):
    first = services.entry_put(owner=owner, uid="alice", key="editor", value="vim").entry
    services.entry_delete(owner=owner, uid="alice", key="editor")

    restored = services.entry_restore(owner=owner, uid="alice", key="editor")

    assert restored.honcho_session_id and restored.honcho_session_id != first.honcho_session_id
    operations = dict(SyncTask.objects.values_list("session_id", "operation"))
    assert operations == {
        first.honcho_session_id: SyncTask.Operation.DELETE,
        restored.honcho_session_id: SyncTask.Operation.UPSERT,
    }
