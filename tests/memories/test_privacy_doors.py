"""Privacy and erasure through every door: the REST API, its schema, the tool, the dashboard and the command."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from memories import selectors, services
from memories.models import MemoryEntry, MemoryEvent

MEMORIES = "/api/v1/users/alice/memories/"


def test_a_put_names_its_privacy_and_the_answer_shows_it(owner_api, owner):
    services.account_policy_set(account=owner, default_privacy="local")

    named = owner_api.put(f"{MEMORIES}editor", {"value": "vim", "privacy": "shared"}, format="json")
    defaulted = owner_api.put(f"{MEMORIES}diagnosis", {"value": "asthma"}, format="json")

    assert (named.status_code, named.json()["privacy"]) == (201, "shared")
    assert (defaulted.status_code, defaulted.json()["privacy"]) == (201, "local")
    assert owner_api.get(f"{MEMORIES}diagnosis").json()["privacy"] == "local"
    listed = owner_api.get(MEMORIES).json()["results"]
    assert {entry["key"]: entry["privacy"] for entry in listed} == {"editor": "shared", "diagnosis": "local"}


def test_a_patch_changes_the_privacy_and_the_history_shows_it(owner_api, owner):
    owner_api.put(f"{MEMORIES}diagnosis", {"value": "asthma"}, format="json")

    changed = owner_api.patch(f"{MEMORIES}diagnosis", {"privacy": "local"}, format="json")

    assert (changed.status_code, changed.json()["privacy"], changed.json()["version"]) == (200, "local", 2)
    latest = owner_api.get(f"{MEMORIES}diagnosis/history").json()["results"][0]
    assert (latest["privacy_before"], latest["privacy_after"]) == ("shared", "local")


def test_an_unknown_privacy_is_a_400_naming_the_field_and_writes_nothing(owner_api):
    response = owner_api.put(f"{MEMORIES}editor", {"value": "vim", "privacy": "public"}, format="json")

    assert response.status_code == 400
    assert list(response.json()) == ["privacy"]
    assert not MemoryEntry.objects.exists()


def test_a_batch_operation_names_its_privacy(owner_api):
    response = owner_api.post(
        f"{MEMORIES}batch",
        {"operations": [{"op": "put", "key": "diagnosis", "value": "asthma", "privacy": "local"}]},
        format="json",
    )

    assert response.status_code == 200
    assert response.json()["results"][0]["entry"]["privacy"] == "local"


def test_the_schema_documents_privacy_and_erase(client, db):
    schema = client.get("/api/schema/?format=json").json()
    write = schema["components"]["schemas"]["EntryWriteRequest"]["properties"]["privacy"]
    entry = schema["components"]["schemas"]["Entry"]["properties"]["privacy"]
    forget = schema["paths"]["/api/v1/users/{uid}/"]["delete"]
    assert "never leaves" in (write.get("description", "") + entry.get("description", ""))
    assert "erase" in {parameter["name"] for parameter in forget["parameters"]}


def test_the_tool_stores_with_a_privacy_class(owner_api, owner):
    stored = owner_api.post(
        "/api/v1/tool", {"action": "store", "key": "diagnosis", "value": "asthma", "privacy": "local"}, format="json"
    )
    refused = owner_api.post(
        "/api/v1/tool", {"action": "store", "key": "editor", "value": "vim", "privacy": "public"}, format="json"
    )
    schema = owner_api.get("/api/v1/tool/schema").json()

    assert stored.json() == {"ok": True, "key": "diagnosis"}
    assert selectors.entry_get(owner=owner, uid="default", key="diagnosis").privacy == "local"
    assert refused.json()["ok"] is False and "privacy" in refused.json()["error"]
    assert schema["parameters"]["properties"]["privacy"]["enum"] == ["local", "shared"]
    assert schema["parameters"]["required"] == ["action"]


def _fill(owner) -> None:
    services.entry_put(owner=owner, uid="alice", key="diagnosis", value="asthma")
    services.entry_put(owner=owner, uid="alice", key="diagnosis", value="asthma, mild")
    services.entry_put(owner=owner, uid="alice", key="editor", value="vim", privacy="local")


def test_the_api_erases_a_user_and_the_history_keeps_one_row(owner_api, owner):
    _fill(owner)

    response = owner_api.delete("/api/v1/users/alice/?erase=1")

    assert response.status_code == 200
    assert response.json() == {"uid": "alice", "deleted": 2, "erased": True, "history_erased": 3}
    assert owner_api.get(f"{MEMORIES}diagnosis/history").status_code == 404
    erased = MemoryEvent.objects.get(owner=owner, uid="alice")
    assert (erased.action, erased.entries_erased, erased.actor, erased.value_before) == ("erase", 2, owner, None)
    assert owner_api.delete("/api/v1/users/alice/?erase=1").status_code == 404


def test_the_api_refuses_a_bad_erase_flag_and_a_strangers_erasure(owner_api, stranger_api, owner):
    _fill(owner)

    bad = owner_api.delete("/api/v1/users/alice/?erase=maybe")
    stranger = stranger_api.delete("/api/v1/users/alice/?erase=1")

    assert bad.status_code == 400 and list(bad.json()) == ["erase"]
    assert stranger.status_code == 404
    assert MemoryEntry.objects.filter(owner=owner).count() == 2
    assert MemoryEvent.objects.filter(owner=owner).count() == 3


@pytest.mark.parametrize("flag", ["1", "true", "yes", "on", "TRUE"])
def test_the_erase_flag_takes_the_words_include_expired_takes(owner_api, owner, flag):
    _fill(owner)

    response = owner_api.delete(f"/api/v1/users/alice/?erase={flag}")

    assert response.status_code == 200
    assert response.json()["erased"] is True
    assert MemoryEvent.objects.get(owner=owner, uid="alice").action == "erase"


@pytest.mark.parametrize("flag", ["", "0", "false", "no", "off"])
def test_an_erase_flag_that_says_no_forgets_and_keeps_the_history(owner_api, owner, flag):
    _fill(owner)

    response = owner_api.delete(f"/api/v1/users/alice/?erase={flag}")

    assert response.status_code == 200
    assert response.json() == {"uid": "alice", "deleted": 2, "erased": False}
    assert MemoryEvent.objects.filter(owner=owner, uid="alice").count() == 5


def test_a_bad_erase_flag_and_a_bad_include_expired_are_refused_alike(owner_api, owner):
    _fill(owner)

    erase = owner_api.delete("/api/v1/users/alice/?erase=maybe")
    include_expired = owner_api.get(f"{MEMORIES}?include_expired=maybe")

    assert (erase.status_code, include_expired.status_code) == (400, 400)
    assert erase.json()["erase"] == include_expired.json()["include_expired"]
    assert "true" in erase.json()["erase"][0]


def test_a_plain_forget_keeps_the_history(owner_api, owner):
    _fill(owner)

    response = owner_api.delete("/api/v1/users/alice/")

    assert response.json() == {"uid": "alice", "deleted": 2, "erased": False}
    assert MemoryEvent.objects.filter(owner=owner, uid="alice").count() == 5


# The dashboard --------------------------------------------------------------------------------------


def test_the_dashboard_creates_and_edits_the_privacy_and_shows_it(owner_client, owner):
    services.account_policy_set(account=owner, default_privacy="local")
    form = owner_client.get("/memory/new/").content.decode()
    assert 'value="local" id="id_privacy_1" checked>' in form  # the account's default, preselected

    owner_client.post(
        "/memory/new/",
        {"uid": "alice", "key": "diagnosis", "value": "asthma", "kind": "fact", "meta": "{}", "privacy": "local"},
    )
    entry = selectors.entry_get(owner=owner, uid="alice", key="diagnosis")
    assert entry.privacy == "local"
    assert "never leaves this hub" in owner_client.get("/memory/?uid=alice&key=diagnosis").content.decode()
    assert ">local</span>" in owner_client.get("/user/?uid=alice").content.decode()

    owner_client.post(
        "/memory/edit/?uid=alice&key=diagnosis",
        {"value": "asthma", "kind": "fact", "meta": "{}", "privacy": "shared", "version": "1"},
    )
    entry.refresh_from_db()
    assert (entry.privacy, entry.version) == ("shared", 2)


def test_the_dashboard_refuses_an_unknown_privacy(owner_client, owner):
    response = owner_client.post(
        "/memory/new/",
        {"uid": "alice", "key": "diagnosis", "value": "asthma", "kind": "fact", "meta": "{}", "privacy": "public"},
    )

    assert response.status_code == 200
    assert "Select a valid choice" in response.content.decode()
    assert not MemoryEntry.objects.exists()


def test_the_dashboard_erases_a_user_after_asking(owner_client, owner, stranger_client):
    _fill(owner)
    services.entry_put(owner=owner, uid="bob", key="editor", value="emacs")

    page = owner_client.get("/user/forget/?uid=alice").content.decode()
    assert "Erase alice" in page and "all <strong>3</strong> events" in page
    assert stranger_client.post("/user/forget/?uid=alice&account=owner", {"erase": "1"}).status_code == 404
    response = owner_client.post("/user/forget/?uid=alice", {"erase": "1"}, follow=True)

    # Sync is off: nothing was mirrored to Honcho, and the message does not say otherwise.
    said = "Erased <bdi>alice</bdi>: 2 memories and 3 history events removed. The history records the erasure."
    assert said in response.content.decode()
    assert list(MemoryEntry.objects.values_list("uid", flat=True)) == ["bob"]
    assert list(MemoryEvent.objects.filter(uid="alice").values_list("action", flat=True)) == ["erase"]


def test_the_dashboards_erasure_says_honchos_copies_are_queued_when_sync_mirrored_them(owner_client, owner, settings):
    settings.MEMORYHUB_HONCHO_SYNC = True
    _fill(owner)

    response = owner_client.post("/user/forget/?uid=alice", {"erase": "1"}, follow=True)

    assert "removed, Honcho&#x27;s copies queued for deletion. The history" in response.content.decode()


def test_a_forgotten_user_can_still_be_erased_from_the_dashboard(owner_client, owner):
    _fill(owner)
    services.user_forget(owner=owner, uid="alice")

    page = owner_client.get("/user/forget/?uid=alice").content.decode()
    response = owner_client.post("/user/forget/?uid=alice", {"erase": "1"}, follow=True)

    assert "Forget alice" not in page.split("<h2>")[0].split("</h1>")[1]
    assert "Erased <bdi>alice</bdi>: 0 memories and 5 history events removed" in response.content.decode()
    assert owner_client.get("/user/forget/?uid=alice").status_code == 404


# The command ------------------------------------------------------------------------------------------


def _forget(*args: str) -> str:
    out = StringIO()
    call_command("forget", *args, stdout=out)
    return out.getvalue()


def test_the_forget_command_forgets_and_with_erase_erases(owner):
    _fill(owner)
    services.entry_put(owner=owner, uid="bob", key="editor", value="emacs")

    assert _forget("owner", "bob").strip() == "Forgot bob: 1 entry deleted, history kept."
    assert MemoryEvent.objects.filter(uid="bob").count() == 2
    # Sync is off: no Honcho session is queued for deletion, and none is said to be.
    erased = _forget("owner", "alice", "--erase").strip()
    assert erased == "Erased alice: 2 entries and 3 history events removed; the history records the erasure by owner."
    assert list(MemoryEvent.objects.filter(uid="alice").values_list("action", "entries_erased")) == [("erase", 2)]
    with pytest.raises(CommandError, match="holds nothing about 'alice'"):
        _forget("owner", "alice", "--erase")
    with pytest.raises(CommandError, match="No account named 'nobody'"):
        _forget("nobody", "alice")


def test_the_forget_command_records_who_asked_for_it_with_by(owner, staff):
    _fill(owner)
    services.entry_put(owner=owner, uid="bob", key="editor", value="emacs")

    assert "the history records the erasure by staffer" in _forget("owner", "alice", "--erase", "--by", "staffer")
    _forget("owner", "bob", "--by", "staffer")

    erased = MemoryEvent.objects.get(uid="alice")
    assert (erased.action, erased.actor) == ("erase", staff)
    assert MemoryEvent.objects.get(uid="bob", action="delete").actor == staff
    with pytest.raises(CommandError, match="No account named 'nobody'"):
        _forget("owner", "bob", "--by", "nobody")


def test_the_forget_command_says_honchos_sessions_are_queued_when_sync_mirrored_them(owner, settings):
    settings.MEMORYHUB_HONCHO_SYNC = True
    _fill(owner)

    erased = _forget("owner", "alice", "--erase")

    assert "removed, their Honcho sessions queued for deletion; the history records" in erased
