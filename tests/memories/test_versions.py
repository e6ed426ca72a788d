"""A version names one state of a key forever: a delete and a re-create never hand out a version again."""

from datetime import UTC, datetime
from typing import Any

import pytest
from django.core.management import call_command

from memories import exchange, selectors, services
from memories.models import MemoryEntry

URL = "/api/v1/users/alice/memories/editor"


@pytest.fixture
def deleted_at_two(owner):
    """alice/editor written twice (versions 1 and 2), then deleted at version 2."""
    services.entry_put(owner=owner, uid="alice", key="editor", value="vim")
    services.entry_put(owner=owner, uid="alice", key="editor", value="emacs")
    services.entry_delete(owner=owner, uid="alice", key="editor")
    return owner


def _version(owner) -> int:
    return selectors.entry_get(owner=owner, uid="alice", key="editor").version


def test_a_put_after_a_delete_goes_on_from_the_last_version(deleted_at_two, owner_api):
    response = owner_api.put(URL, {"value": "helix"}, format="json")
    assert (response.status_code, response["ETag"], response.json()["version"]) == (201, '"3"', 3)


def test_an_etag_held_from_before_the_delete_cannot_overwrite_the_new_memory(deleted_at_two, owner_api):
    owner_api.put(URL, {"value": "helix"}, format="json")
    for stale in ('"1"', '"2"'):
        assert owner_api.put(URL, {"value": "nano"}, format="json", HTTP_IF_MATCH=stale).status_code == 412
        assert owner_api.delete(URL, HTTP_IF_MATCH=stale).status_code == 412
    assert owner_api.get(URL).json()["value"] == "helix"


def test_a_post_after_a_delete_goes_on_from_the_last_version(deleted_at_two, owner_api):
    response = owner_api.post("/api/v1/users/alice/memories", {"key": "editor", "value": "helix"}, format="json")
    assert (response.status_code, response.json()["version"]) == (201, 3)


def test_a_batch_put_after_a_delete_goes_on_from_the_last_version(deleted_at_two, owner):
    (outcome,) = services.entries_batch(
        owner=owner, uid="alice", operations=[services.BatchOperation(op="put", key="editor", value="helix")]
    )
    assert (outcome.status, outcome.entry.version) == ("created", 3)


def test_a_delete_and_put_in_one_batch_go_on_counting(owner):
    services.entry_put(owner=owner, uid="alice", key="editor", value="vim")
    outcomes = services.entries_batch(
        owner=owner,
        uid="alice",
        operations=[
            services.BatchOperation(op="delete", key="editor"),
            services.BatchOperation(op="put", key="editor", value="helix"),
        ],
    )
    assert outcomes[1].entry.version == 2


def test_forgetting_a_user_does_not_reset_the_versions_of_their_keys(deleted_at_two, owner):
    services.entry_put(owner=owner, uid="alice", key="editor", value="helix")
    services.user_forget(owner=owner, uid="alice")
    assert services.entry_put(owner=owner, uid="alice", key="editor", value="ed").entry.version == 4


def test_the_tool_store_after_a_delete_goes_on_from_the_last_version(deleted_at_two, owner, owner_api):
    response = owner_api.post(
        "/api/v1/tool", {"action": "store", "uid": "alice", "key": "editor", "value": "helix"}, format="json"
    )
    assert response.json()["ok"] is True
    assert _version(owner) == 3


def test_the_dashboard_create_form_after_a_delete_goes_on_from_the_last_version(deleted_at_two, owner, owner_client):
    response = owner_client.post("/memory/new/", {"uid": "alice", "key": "editor", "value": "helix", "kind": "tool"})
    assert response.status_code == 302
    assert _version(owner) == 3


def test_the_admin_add_form_after_a_delete_goes_on_from_the_last_version(deleted_at_two, owner, staff, client):
    client.force_login(staff)
    response = client.post(
        "/admin/memories/memoryentry/add/",
        {"owner": owner.pk, "uid": "alice", "key": "editor", "value": "helix", "kind": "tool", "meta": "{}"},
    )
    assert response.status_code == 302
    assert _version(owner) == 3


def test_an_import_after_a_delete_goes_on_from_the_last_version(deleted_at_two, owner, tmp_path):
    # A backup taken while alice/editor was at version 1, imported after it was deleted at version 2.
    moment = datetime(2026, 11, 1, tzinfo=UTC)
    backup = tmp_path / "backup.jsonl"
    with backup.open("wb") as destination:
        exchange.write_export(
            [("owner", "alice", "editor", "vim", "preference", {}, "shared", moment, moment, 1, None)], destination
        )
    call_command("import_memories", str(backup), "--quiet")
    assert _version(owner) == 3
    history = selectors.entry_history(owner=owner, uid="alice", key="editor").values_list("action", "version")
    assert history[0] == ("create", 3)


def test_an_import_of_an_entry_lost_with_its_history_kept_keeps_its_version(owner, tmp_path):
    services.entry_put(owner=owner, uid="alice", key="editor", value="vim")
    services.entry_put(owner=owner, uid="alice", key="editor", value="emacs")
    backup = tmp_path / "backup.jsonl"
    call_command("export_memories", str(backup))
    MemoryEntry.objects.all().delete()
    call_command("import_memories", str(backup), "--quiet")
    assert _version(owner) == 2


def test_a_restore_with_the_deleted_version_in_if_match_brings_it_back(deleted_at_two, owner_api):
    response = owner_api.post(URL + "/restore", HTTP_IF_MATCH='"2"')
    assert (response.status_code, response.json()["value"], response["ETag"]) == (201, "emacs", '"3"')


def test_a_restore_with_another_version_in_if_match_is_refused_and_restores_nothing(deleted_at_two, owner_api):
    for stale in ('"1"', '"3"', '"02"', 'W/"2"'):
        response = owner_api.post(URL + "/restore", HTTP_IF_MATCH=stale)
        assert response.status_code == 412, stale
        assert owner_api.get(URL).status_code == 404
    assert "deleted at version 2" in owner_api.post(URL + "/restore", HTTP_IF_MATCH='"1"').json()["detail"]


def test_a_restore_names_the_latest_deletion_not_an_earlier_one(deleted_at_two, owner, owner_api):
    services.entry_restore(owner=owner, uid="alice", key="editor")
    services.entry_put(owner=owner, uid="alice", key="editor", value="helix")
    services.entry_delete(owner=owner, uid="alice", key="editor")
    # An agent that saw the first deletion (at 2) does not bring back helix, deleted at 4.
    assert owner_api.post(URL + "/restore", HTTP_IF_MATCH='"2"').status_code == 412
    assert owner_api.post(URL + "/restore", HTTP_IF_MATCH='"4"').json()["value"] == "helix"


def test_a_restore_with_if_match_star_needs_a_deletion(deleted_at_two, owner_api):
    missing = owner_api.post("/api/v1/users/alice/memories/never/restore", HTTP_IF_MATCH="*")
    assert missing.status_code == 412
    assert owner_api.post(URL + "/restore", HTTP_IF_MATCH="*").status_code == 201


@pytest.fixture
def at_five(owner_api):
    for value in ("a", "b", "c", "d", "e"):
        owner_api.put(URL, {"value": value}, format="json")
    return owner_api


@pytest.mark.parametrize("header", ['"05"', '"+5"', '"5 "', '" 5"', '"5.0"'])
def test_etags_compare_as_strings(at_five, header):
    assert at_five.put(URL, {"value": "f"}, format="json", HTTP_IF_MATCH=header).status_code == 412
    assert at_five.delete(URL, HTTP_IF_MATCH=header).status_code == 412
    assert at_five.get(URL).json()["value"] == "e"
    assert at_five.put(URL, {"value": "f"}, format="json", HTTP_IF_MATCH='"5"').status_code == 200


def test_if_match_zero_never_creates_a_missing_entry(owner_api):
    assert owner_api.put(URL, {"value": "vim"}, format="json", HTTP_IF_MATCH='"0"').status_code == 412
    assert owner_api.get(URL).status_code == 404


@pytest.mark.parametrize("header", ['"5"', 'W/"5"', '"4", "5"', "*"])
def test_a_get_with_a_matching_if_none_match_answers_304_with_the_etag_and_no_body(at_five, header):
    response = at_five.get(URL, HTTP_IF_NONE_MATCH=header)
    assert (response.status_code, response["ETag"], response.content) == (304, '"5"', b"")


@pytest.mark.parametrize("header", ['"4"', '"05"', '"6"'])
def test_a_get_with_another_if_none_match_answers_the_memory(at_five, header):
    response = at_five.get(URL, HTTP_IF_NONE_MATCH=header)
    assert (response.status_code, response.json()["value"]) == (200, "e")


def test_if_none_match_on_a_missing_memory_is_still_404(owner_api):
    assert owner_api.get(URL, HTTP_IF_NONE_MATCH="*").status_code == 404


@pytest.fixture
def admin_browser(client, staff):
    client.force_login(staff)
    return client


def test_the_admin_change_form_carries_the_version_it_showed(admin_browser, owner):
    entry = services.entry_put(owner=owner, uid="alice", key="editor", value="vim").entry
    page = admin_browser.get(f"/admin/memories/memoryentry/{entry.pk}/change/").content.decode()
    assert 'name="shown_version" value="1"' in page


def test_the_admin_change_form_refuses_to_overwrite_a_newer_value(admin_browser, owner):
    entry = services.entry_put(owner=owner, uid="alice", key="editor", value="vim").entry
    services.entry_put(owner=owner, uid="alice", key="editor", value="emacs")
    response = admin_browser.post(
        f"/admin/memories/memoryentry/{entry.pk}/change/",
        {"value": "nano", "kind": "preference", "meta": "{}", "shown_version": "1"},
    )
    assert response.status_code == 200
    assert "changed while you were editing it" in response.content.decode()
    assert (_version(owner), selectors.entry_get(owner=owner, uid="alice", key="editor").value) == (2, "emacs")


def test_the_admin_change_form_without_a_version_changes_nothing(admin_browser, owner):
    entry = services.entry_put(owner=owner, uid="alice", key="editor", value="vim").entry
    response = admin_browser.post(
        f"/admin/memories/memoryentry/{entry.pk}/change/", {"value": "nano", "kind": "preference", "meta": "{}"}
    )
    assert response.status_code == 200
    assert selectors.entry_get(owner=owner, uid="alice", key="editor").value == "vim"


def test_a_change_landing_between_the_admin_check_and_its_write_is_not_overwritten(admin_browser, owner, monkeypatch):
    entry = services.entry_put(owner=owner, uid="alice", key="editor", value="vim").entry
    real_put = services.entry_put

    def put_after_a_concurrent_change(**arguments: Any) -> services.PutResult:
        real_put(owner=owner, uid="alice", key="editor", value="emacs")
        return real_put(**arguments)

    monkeypatch.setattr(services, "entry_put", put_after_a_concurrent_change)
    response = admin_browser.post(
        f"/admin/memories/memoryentry/{entry.pk}/change/",
        {"value": "nano", "kind": "preference", "meta": "{}", "shown_version": "1"},
        follow=True,
    )
    assert "Nothing was saved" in response.content.decode()
    assert selectors.entry_get(owner=owner, uid="alice", key="editor").value == "emacs"
