"""A deleted entry comes back from its history, through the API and through the admin."""

from datetime import UTC, datetime

import pytest
from django.urls import reverse

from memories import selectors, services
from memories.models import MemoryEvent

URL = "/api/v1/users/alice/memories/editor"


@pytest.fixture
def deleted(owner):
    services.entry_put(owner=owner, uid="alice", key="editor", value="vim", kind="tool", meta={"source": "chat"})
    services.entry_put(owner=owner, uid="alice", key="editor", value="emacs")
    services.entry_delete(owner=owner, uid="alice", key="editor")
    return owner


def test_restore_brings_back_the_entry_as_it_was_when_deleted(deleted, owner_api):
    response = owner_api.post(URL + "/restore")
    assert response.status_code == 201
    body = response.json()
    assert (body["value"], body["kind"], body["meta"]) == ("emacs", "tool", {"source": "chat"})
    assert owner_api.get(URL).json()["value"] == "emacs"


def test_a_restored_entry_goes_on_from_the_deleted_version_and_the_history_says_so(deleted, owner_api):
    response = owner_api.post(URL + "/restore")
    assert response.json()["version"] == 3
    assert response["ETag"] == '"3"'
    history = owner_api.get(URL + "/history").json()["results"]
    assert [(event["action"], event["version"]) for event in history] == [
        ("create", 3),
        ("delete", 2),
        ("update", 2),
        ("create", 1),
    ]
    assert history[0]["value_after"] == "emacs"


def test_a_restored_entry_has_the_creation_time_it_had_when_deleted(owner_api):
    created = owner_api.put(URL, {"value": "vim"}, format="json").json()["created"]
    owner_api.put(URL, {"value": "emacs"}, format="json")
    owner_api.delete(URL)

    restored = owner_api.post(URL + "/restore").json()

    assert restored["created"] == created
    assert restored["updated"] > created
    assert owner_api.get(URL).json()["created"] == created


def test_an_entry_restored_twice_keeps_its_first_creation_time(owner):
    created = services.entry_put(owner=owner, uid="alice", key="editor", value="vim").entry.created
    services.entry_delete(owner=owner, uid="alice", key="editor")
    services.entry_restore(owner=owner, uid="alice", key="editor")
    services.entry_delete(owner=owner, uid="alice", key="editor")

    entry = services.entry_restore(owner=owner, uid="alice", key="editor")

    assert entry.created == created
    assert selectors.entry_get(owner=owner, uid="alice", key="editor").created == created


def test_an_imported_entry_restored_keeps_the_creation_time_it_was_imported_with(owner):
    moment = datetime(2025, 3, 1, 12, 30, 15, 123456, tzinfo=UTC)
    services.entries_import(
        owner=owner,
        records=[services.ImportRecord(uid="alice", key="editor", value="vim", created=moment, updated=moment)],
    )
    services.entry_delete(owner=owner, uid="alice", key="editor")

    entry = services.entry_restore(owner=owner, uid="alice", key="editor")

    assert entry.created == moment


def test_a_deletion_recorded_without_the_creation_time_restores_the_creation_events_time(deleted):
    # History written before deletions recorded the entry's creation time: the entry's creation event is the
    # nearest the hub has (within the moment of the same write).
    MemoryEvent.objects.update(created_before=None)
    first_creation = MemoryEvent.objects.filter(uid="alice", key="editor", action="create").get().at

    entry = services.entry_restore(owner=deleted, uid="alice", key="editor")

    assert entry.created == first_creation
    assert entry.updated > first_creation


def test_restoring_an_entry_that_exists_is_a_conflict_and_changes_nothing(deleted, owner_api):
    owner_api.put(URL, {"value": "helix"}, format="json")
    response = owner_api.post(URL + "/restore")
    assert response.status_code == 409
    assert owner_api.get(URL).json()["value"] == "helix"


def test_restoring_what_was_never_deleted_is_not_found(owner_api):
    assert owner_api.post("/api/v1/users/alice/memories/never/restore").status_code == 404


def test_another_account_cannot_restore_the_entry(deleted, stranger_api):
    assert stranger_api.post(URL + "/restore").status_code == 404
    assert selectors.entry_get(owner=deleted, uid="alice", key="editor") is None


def test_the_admin_action_restores_the_selected_deletions(deleted, staff, client):
    client.force_login(staff)
    deletion = MemoryEvent.objects.get(action="delete")
    response = client.post(
        reverse("admin:memories_memoryevent_changelist"),
        {"action": "restore_deleted_entries", "_selected_action": [deletion.pk]},
        follow=True,
    )
    assert "Restored 1 entries." in response.content.decode()
    entry = selectors.entry_get(owner=deleted, uid="alice", key="editor")
    assert entry.value == "emacs"
    assert MemoryEvent.objects.filter(uid="alice", key="editor", action="create", version=3, actor=staff).exists()
