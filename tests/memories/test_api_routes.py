"""The router's routes: keys that share a name with an action stay entries like any other."""

import pytest
from django.urls import resolve

from memories import services
from memories.models import MemoryEntry

BASE = "/api/v1/users/alice/memories"
ACTION_NAMES = ["batch", "history", "restore"]


@pytest.mark.parametrize("key", ACTION_NAMES)
@pytest.mark.parametrize("slash", ["", "/"])
def test_a_key_named_as_an_action_is_written_read_patched_and_deleted_as_an_entry(owner_api, key, slash):
    url = f"{BASE}/{key}{slash}"

    created = owner_api.put(url, {"value": f"a key named {key}"}, format="json")
    read = owner_api.get(url)
    patched = owner_api.patch(url, {"kind": "fact"}, format="json", HTTP_IF_MATCH='"1"')
    deleted = owner_api.delete(url, HTTP_IF_MATCH='"2"')

    assert (created.status_code, created.json()["key"], created["ETag"]) == (201, key, '"1"')
    assert (read.status_code, read.json()["value"], read["ETag"]) == (200, f"a key named {key}", '"1"')
    assert (patched.status_code, patched.json()["kind"], patched.json()["version"]) == (200, "fact", 2)
    assert deleted.status_code == 204
    assert owner_api.get(url).status_code == 404


@pytest.mark.parametrize("key", ACTION_NAMES)
def test_a_key_named_as_an_action_has_its_own_history_and_restore(owner, owner_api, key):
    services.entry_put(owner=owner, uid="alice", key=key, value="first")
    services.entry_delete(owner=owner, uid="alice", key=key)

    history = owner_api.get(f"{BASE}/{key}/history")
    restored = owner_api.post(f"{BASE}/{key}/restore")

    assert history.status_code == 200
    assert [event["action"] for event in history.json()["results"]] == ["delete", "create"]
    assert (restored.status_code, restored.json()["key"], restored.json()["value"]) == (201, key, "first")


def test_post_to_batch_is_a_batch_and_a_put_there_is_the_entry_named_batch(owner, owner_api):
    batch = owner_api.post(
        f"{BASE}/batch", {"operations": [{"op": "put", "key": "editor", "value": "vim"}]}, format="json"
    )
    entry = owner_api.put(f"{BASE}/batch", {"value": "an entry"}, format="json")

    assert batch.status_code == 200
    assert batch.json()["results"][0]["key"] == "editor"
    assert entry.status_code == 201
    assert sorted(MemoryEntry.objects.filter(owner=owner, uid="alice").values_list("key", flat=True)) == [
        "batch",
        "editor",
    ]


def test_a_head_on_the_batch_route_is_the_entry_named_batch(owner, owner_api):
    services.entry_put(owner=owner, uid="alice", key="batch", value="an entry")

    head = owner_api.head(f"{BASE}/batch")

    assert (head.status_code, head["ETag"]) == (200, '"1"')


def test_a_method_a_route_does_not_take_answers_405_naming_it(owner_api):
    response = owner_api.put("/api/v1/users/")

    assert response.status_code == 405
    assert response.json() == {"detail": 'Method "PUT" not allowed.'}


def test_the_routes_keep_their_names(db):
    names = {
        "/api/v1/users": "user-list",
        "/api/v1/users/alice": "user-detail",
        f"{BASE}": "memory-list",
        f"{BASE}/batch": "memory-batch",
        f"{BASE}/editor": "memory-detail",
        f"{BASE}/editor/history": "memory-history",
        f"{BASE}/editor/restore": "memory-restore",
        "/api/v1/info": "info",
        "/api/v1/sync/status": "sync-status",
        "/api/v1/tool": "tool",
        "/api/v1/tool/schema": "tool-schema",
        "/api/v1/evaluations": "evaluation-list",
    }

    assert {path: resolve(path).url_name for path in names} == names


@pytest.mark.parametrize("path", ["/api/v1/users/", f"{BASE}/", f"{BASE}/editor", f"{BASE}/batch", "/api/v1/info"])
def test_the_browsable_api_renders_each_resource_for_a_signed_in_person(owner, owner_client, path):
    services.entry_put(owner=owner, uid="alice", key="editor", value="vim")
    services.entry_put(owner=owner, uid="alice", key="batch", value="an entry")

    page = owner_client.get(path, HTTP_ACCEPT="text/html")

    assert page.status_code == 200
    assert page["Content-Type"].startswith("text/html")
