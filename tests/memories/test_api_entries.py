import pytest

from memories import services
from memories.models import MemoryEntry

BASE = "/api/v1/users"


@pytest.fixture
def alice_language(owner):
    return services.entry_put(
        owner=owner, uid="alice", key="language", value="prefers Python", meta={"source": "chat"}
    ).entry


def test_put_creates_with_201_then_answers_200_when_changed_or_unchanged(owner_api):
    created = owner_api.put(f"{BASE}/alice/memories/language", {"value": "Python", "kind": "fact"}, format="json")
    changed = owner_api.put(f"{BASE}/alice/memories/language", {"value": "Rust"}, format="json")
    unchanged = owner_api.put(f"{BASE}/alice/memories/language", {"value": "Rust"}, format="json")

    assert (created.status_code, created.json()["version"], created.json()["kind"]) == (201, 1, "fact")
    assert (changed.status_code, changed.json()["version"], changed.json()["kind"]) == (200, 2, "fact")
    assert (unchanged.status_code, unchanged.json()["version"]) == (200, 2)


def test_post_with_the_key_in_the_body_upserts_the_same_way(owner_api):
    first = owner_api.post(f"{BASE}/alice/memories/", {"key": "editor", "value": "vim"}, format="json")
    second = owner_api.post(f"{BASE}/alice/memories", {"key": "editor", "value": "helix"}, format="json")

    assert first.status_code == 201
    assert (second.status_code, second.json()["value"], second.json()["version"]) == (200, "helix", 2)


def test_a_trailing_slash_is_optional_on_every_path(owner_api, alice_language):
    for path in (
        f"{BASE}",
        f"{BASE}/alice/memories",
        f"{BASE}/alice/memories/language",
        f"{BASE}/alice/memories/language/history",
        "/api/v1/info",
        "/api/v1/tool/schema",
    ):
        assert owner_api.get(path).status_code == 200, path
        assert owner_api.get(path + "/").status_code == 200, path + "/"


def test_get_returns_the_whole_entry(owner_api, alice_language):
    body = owner_api.get(f"{BASE}/alice/memories/language").json()

    assert body["uid"] == "alice"
    assert body["key"] == "language"
    assert body["value"] == "prefers Python"
    assert body["kind"] == "preference"
    assert body["meta"] == {"source": "chat"}
    assert body["version"] == 1
    assert body["created"] and body["updated"]


def test_patch_changes_only_what_it_sends(owner_api, alice_language):
    response = owner_api.patch(f"{BASE}/alice/memories/language", {"kind": "fact"}, format="json")

    assert response.status_code == 200
    assert (response.json()["value"], response.json()["kind"], response.json()["version"]) == (
        "prefers Python",
        "fact",
        2,
    )
    assert owner_api.patch(f"{BASE}/alice/memories/nothing", {"kind": "fact"}, format="json").status_code == 404


def test_delete_answers_204_then_404_and_the_history_stays(owner_api, alice_language):
    assert owner_api.delete(f"{BASE}/alice/memories/language").status_code == 204
    assert owner_api.get(f"{BASE}/alice/memories/language").status_code == 404
    assert owner_api.delete(f"{BASE}/alice/memories/language").status_code == 404

    history = owner_api.get(f"{BASE}/alice/memories/language/history").json()
    assert [event["action"] for event in history["results"]] == ["delete", "create"]


def test_history_lists_every_change_newest_first_with_the_account_that_made_it(owner_api, alice_language):
    owner_api.put(f"{BASE}/alice/memories/language", {"value": "prefers Rust"}, format="json")

    history = owner_api.get(f"{BASE}/alice/memories/language/history").json()

    assert history["count"] == 2
    newest = history["results"][0]
    assert newest["action"] == "update"
    assert (newest["value_before"], newest["value_after"], newest["version"]) == ("prefers Python", "prefers Rust", 2)
    assert newest["actor"] == "owner"
    assert owner_api.get(f"{BASE}/alice/memories/never/history").status_code == 404


def test_list_is_newest_first_paginated_and_filters_on_kind(owner, owner_api):
    for number in range(5):
        services.entry_put(
            owner=owner, uid="alice", key=f"k{number}", value=f"v{number}", kind="fact" if number % 2 else "preference"
        )

    page = owner_api.get(f"{BASE}/alice/memories/?page_size=2").json()
    assert page["count"] == 5
    assert [entry["key"] for entry in page["results"]] == ["k4", "k3"]
    assert page["next"]
    second = owner_api.get(f"{BASE}/alice/memories/?page_size=2&page=2").json()
    assert [entry["key"] for entry in second["results"]] == ["k2", "k1"]
    facts = owner_api.get(f"{BASE}/alice/memories/?kind=fact").json()
    assert sorted(entry["key"] for entry in facts["results"]) == ["k1", "k3"]


@pytest.mark.parametrize("time_zone", ["UTC", "Asia/Kolkata"])
def test_an_entry_in_a_page_reads_exactly_as_the_entry_alone(owner, owner_api, settings, time_zone):
    settings.TIME_ZONE = time_zone
    services.entry_put(owner=owner, uid="alice", key="plain", value="tea")
    services.entry_put(
        owner=owner, uid="alice", key="language", value="prefers Python", kind="fact", meta={"source": "chat", "n": [1]}
    )
    services.entry_put(owner=owner, uid="alice", key="language", value="prefers Python and Rust", kind="fact")

    listed = owner_api.get(f"{BASE}/alice/memories/").json()["results"]
    found = owner_api.get(f"{BASE}/alice/memories/?q=python").json()["results"]

    alone = {key: owner_api.get(f"{BASE}/alice/memories/{key}").json() for key in ("plain", "language")}
    assert listed == [alone["language"], alone["plain"]]
    assert list(listed[0]) == list(alone["language"])  # the same fields, in the same order
    entry_fields = list(alone["language"])
    assert [{name: result[name] for name in entry_fields} for result in found] == [alone["language"]]
    assert list(found[0])[: len(entry_fields)] == entry_fields  # the entry's fields first, then the ranking's
    assert found[0]["matched_terms"] == ["python"] and found[0]["score"] > 0 and found[0]["lexical_rank"] == 1


def test_query_finds_key_or_value_in_any_case_newest_first(owner, owner_api):
    services.entry_put(owner=owner, uid="alice", key="language", value="prefers Python")
    services.entry_put(owner=owner, uid="alice", key="python-version", value="3.11")
    services.entry_put(owner=owner, uid="alice", key="editor", value="vim")
    services.entry_put(owner=owner, uid="bob", key="language", value="Python too")

    found = owner_api.get(f"{BASE}/alice/memories/?q=PYTHON").json()

    assert [entry["key"] for entry in found["results"]] == ["python-version", "language"]


def test_users_lists_uids_with_counts_and_last_update(owner, owner_api, stranger):
    services.entry_put(owner=owner, uid="alice", key="a", value="1")
    services.entry_put(owner=owner, uid="alice", key="b", value="2")
    services.entry_put(owner=owner, uid="bob", key="a", value="3")
    services.entry_put(owner=stranger, uid="carol", key="a", value="4")

    users = owner_api.get(f"{BASE}/").json()["results"]

    assert [(user["uid"], user["entries"]) for user in users] == [("bob", 1), ("alice", 2)]
    assert all(user["last_updated"] for user in users)


def test_forget_deletes_every_entry_of_the_user(owner, owner_api):
    services.entry_put(owner=owner, uid="alice", key="a", value="1")
    services.entry_put(owner=owner, uid="alice", key="b", value="2")

    response = owner_api.delete(f"{BASE}/alice")

    assert response.status_code == 200
    assert response.json() == {"uid": "alice", "deleted": 2, "erased": False}
    assert owner_api.get(f"{BASE}/alice/memories/").json()["count"] == 0
    assert owner_api.get(f"{BASE}/alice/memories/a/history").json()["count"] == 2
    assert owner_api.delete(f"{BASE}/alice").status_code == 404


def test_info_names_the_backend_and_the_accounts_counts(owner, owner_api, stranger):
    services.entry_put(owner=owner, uid="alice", key="a", value="1")
    services.entry_put(owner=stranger, uid="carol", key="a", value="1")

    info = owner_api.get("/api/v1/info").json()

    assert info["backend"] == "local"
    assert info["cloud"] is False
    assert info["available"] is True
    assert info["counts"] == {"entries": 1, "users": 1}
    assert info["version"]


# Every endpoint, seen by a stranger (another account) and by someone with no credentials.

OWNER_ROUTES = [
    ("get", f"{BASE}/alice/memories/language", None),
    ("put", f"{BASE}/alice/memories/language", {"value": "hijacked"}),
    ("patch", f"{BASE}/alice/memories/language", {"value": "hijacked"}),
    ("delete", f"{BASE}/alice/memories/language", None),
    ("get", f"{BASE}/alice/memories/language/history", None),
    ("delete", f"{BASE}/alice", None),
]


@pytest.mark.parametrize(
    ("method", "path", "body"), [route for route in OWNER_ROUTES if route[0] in ("get", "patch", "delete")]
)
def test_a_stranger_gets_404_as_for_a_missing_entry_and_changes_nothing(
    stranger_api, alice_language, method, path, body
):
    response = getattr(stranger_api, method)(path, body, format="json")

    assert response.status_code == 404
    assert "prefers Python" not in response.content.decode()
    entry = MemoryEntry.objects.get(pk=alice_language.pk)
    assert (entry.value, entry.version) == ("prefers Python", 1)


def test_a_strangers_put_writes_their_own_entry_not_the_owners(stranger_api, stranger, alice_language):
    response = stranger_api.put(f"{BASE}/alice/memories/language", {"value": "theirs"}, format="json")

    assert response.status_code == 201
    assert MemoryEntry.objects.get(pk=alice_language.pk).value == "prefers Python"
    assert MemoryEntry.objects.get(owner=stranger).value == "theirs"


def test_a_stranger_sees_no_users_entries_or_results_of_the_owner(stranger_api, alice_language):
    assert stranger_api.get(f"{BASE}/").json()["count"] == 0
    assert stranger_api.get(f"{BASE}/alice/memories/").json()["count"] == 0
    assert stranger_api.get(f"{BASE}/alice/memories/?q=python").json()["count"] == 0
    assert stranger_api.get("/api/v1/info").json()["counts"] == {"entries": 0, "users": 0}


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        *OWNER_ROUTES,
        ("get", f"{BASE}/", None),
        ("get", f"{BASE}/alice/memories/", None),
        ("post", f"{BASE}/alice/memories/", {"key": "x", "value": "y"}),
        ("get", "/api/v1/info", None),
        ("post", "/api/v1/tool", {"action": "list", "uid": "alice"}),
        ("get", "/api/v1/tool/schema", None),
    ],
)
def test_nothing_is_open_without_credentials(anonymous_api, alice_language, method, path, body):
    response = getattr(anonymous_api, method)(path, body, format="json")

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    assert MemoryEntry.objects.get(pk=alice_language.pk).value == "prefers Python"


def test_a_wrong_token_is_refused(anonymous_api, alice_language):
    anonymous_api.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")

    assert anonymous_api.get(f"{BASE}/alice/memories/language").status_code == 401


def test_a_logged_in_session_works_and_needs_csrf_for_writes(owner, alice_language):
    from rest_framework.test import APIClient

    browser = APIClient(enforce_csrf_checks=True)
    assert browser.login(username="owner", password="owner-password-1")

    assert browser.get(f"{BASE}/alice/memories/language").status_code == 200
    assert browser.put(f"{BASE}/alice/memories/language", {"value": "x"}, format="json").status_code == 403
