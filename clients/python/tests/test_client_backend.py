"""HubBackend against a real hub: the agent-side module's Backend protocol, answered as its local backend does.

The protocol: ok() -> bool; put(uid, k, v, meta=None) -> bool; get(uid, k) -> Entry | None;
find(uid, q, n=10) -> list[Entry] (key or value holding q, any case, newest first, at most n);
all(uid) -> list[Entry] (newest first); rm(uid, k) -> bool; name and cloud as properties. An entry
has key, value, uid, etype (from meta["type"], else "preference"), created and updated (Unix
seconds) and meta.
"""

from __future__ import annotations

import inspect
import socket
import time

import pytest
from live_hub import Hub
from memoryhub_client import BackendEntry, HubBackend, MemoryHub


@pytest.fixture
def backend(hub: Hub) -> HubBackend:
    return HubBackend(hub.url, hub.token)


def test_it_has_the_protocols_operations_with_their_signatures() -> None:
    expected = {
        "ok": ["self"],
        "put": ["self", "uid", "k", "v", "meta"],
        "get": ["self", "uid", "k"],
        "find": ["self", "uid", "q", "n"],
        "all": ["self", "uid"],
        "rm": ["self", "uid", "k"],
    }
    for name, parameters in expected.items():
        assert list(inspect.signature(getattr(HubBackend, name)).parameters) == parameters
    assert inspect.signature(HubBackend.find).parameters["n"].default == 10
    assert inspect.signature(HubBackend.put).parameters["meta"].default is None
    assert isinstance(HubBackend.name, property) and isinstance(HubBackend.cloud, property)


def test_put_then_get_answers_the_protocols_entry(backend: HubBackend, uid: str) -> None:
    before = time.time()
    assert backend.put(uid, "language", "prefers Python", {"type": "fact", "source": "chat"}) is True
    entry = backend.get(uid, "language")

    assert isinstance(entry, BackendEntry)
    assert (entry.key, entry.value, entry.uid, entry.etype) == ("language", "prefers Python", uid, "fact")
    assert entry.meta == {"type": "fact", "source": "chat"}
    assert isinstance(entry.created, float) and isinstance(entry.updated, float)
    assert before - 5 <= entry.created <= entry.updated <= time.time() + 5


def test_a_put_without_meta_resets_kind_and_meta_as_the_local_backend_does(backend: HubBackend, uid: str) -> None:
    backend.put(uid, "editor", "vim", {"type": "tool"})
    assert backend.put(uid, "editor", "helix") is True
    entry = backend.get(uid, "editor")
    assert entry is not None
    assert (entry.value, entry.etype, entry.meta) == ("helix", "preference", {})


def test_find_matches_key_or_value_any_case_newest_first_at_most_n(backend: HubBackend, uid: str) -> None:
    backend.put(uid, "python-version", "3.11")
    backend.put(uid, "language", "writes PYTHON daily")
    backend.put(uid, "editor", "vim")
    backend.put(uid, "tests", "pytest, in Python")

    assert [entry.key for entry in backend.find(uid, "python")] == ["tests", "language", "python-version"]
    assert [entry.key for entry in backend.find(uid, "python", 2)] == ["tests", "language"]
    assert backend.find(uid, "rust") == []
    assert [entry.key for entry in backend.find(uid, "", 3)] == ["tests", "editor", "language"]


def test_all_lists_every_entry_newest_first(backend: HubBackend, uid: str) -> None:
    for number in range(3):
        backend.put(uid, f"k{number}", f"v{number}")
    assert [entry.key for entry in backend.all(uid)] == ["k2", "k1", "k0"]
    assert backend.all(f"{uid}-nobody") == []


def test_rm_deletes_and_is_true_for_a_memory_that_is_not_there(backend: HubBackend, uid: str) -> None:
    backend.put(uid, "shell", "zsh")
    assert backend.rm(uid, "shell") is True
    assert backend.get(uid, "shell") is None
    assert backend.rm(uid, "shell") is True


def test_keys_holding_a_slash_work_like_any_other(backend: HubBackend, uid: str) -> None:
    assert backend.put(uid, "projects/memoryhub", "the client") is True
    entry = backend.get(uid, "projects/memoryhub")
    assert entry is not None and entry.value == "the client"
    assert backend.rm(uid, "projects/memoryhub") is True
    assert backend.get(uid, "projects/memoryhub") is None


def test_the_evaluation_rubrics_round_trip_scores_every_operation(backend: HubBackend) -> None:
    # What the module's score() does on its probe uid: put, get, find, rm.
    assert backend.ok() is True
    assert backend.put("_e_", "ek", "ev") is True
    assert backend.get("_e_", "ek") is not None
    assert [entry.key for entry in backend.find("_e_", "ev", 5)] == ["ek"]
    assert backend.rm("_e_", "ek") is True
    assert (backend.name, backend.cloud) == ("memoryhub", False)


def test_a_refused_put_is_false_and_writes_nothing(backend: HubBackend, uid: str) -> None:
    assert backend.put(uid, "colour", "blue", {"type": "not a valid kind"}) is False
    assert backend.get(uid, "colour") is None


def test_a_uid_or_key_no_request_can_carry_is_refused_as_the_protocol_refuses_not_raised(
    backend: HubBackend, uid: str
) -> None:
    # A uid holding '/' (as "slack/U123") or an empty key or uid cannot travel in a path: the protocol's
    # answers for "not stored" and "not found", never an exception out of the agent's call.
    for person, key in ((f"slack/{uid}", "k"), (uid, ""), ("", "k")):
        assert backend.put(person, key, "v") is False
        assert backend.get(person, key) is None
        assert backend.rm(person, key) is False
    assert backend.find(f"slack/{uid}", "v") == []
    assert backend.all(f"slack/{uid}") == []


def test_a_hub_that_cannot_be_reached_or_refuses_the_token_is_not_ok(hub: Hub) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    unreachable = HubBackend(hub=MemoryHub(f"http://127.0.0.1:{closed_port}", "token", max_retries=0))
    assert unreachable.ok() is False
    assert unreachable.put("alice", "k", "v") is False
    assert unreachable.get("alice", "k") is None
    assert unreachable.find("alice", "v") == []
    assert unreachable.cloud is True  # a hub that cannot say is not assumed private

    refused = HubBackend(hub.url, "not-a-token")
    assert refused.ok() is False
    assert refused.all("alice") == []


def test_a_backend_of_privacy_local_writes_entries_that_never_leave_the_hub(hub: Hub, uid: str) -> None:
    local = HubBackend(hub.url, hub.token, privacy="local")
    default = HubBackend(hub.url, hub.token)

    assert local.put(uid, "diagnosis", "asthma", {"type": "fact"}) is True
    assert default.put(uid, "editor", "vim") is True
    # A put without a privacy class keeps the entry's own, as the hub's put does.
    assert default.put(uid, "diagnosis", "asthma, mild", {"type": "fact"}) is True

    with MemoryHub(hub.url, hub.token) as client:
        assert client.get(uid, "diagnosis").privacy == "local"
        assert client.get(uid, "editor").privacy == "shared"
    found = local.get(uid, "diagnosis")
    assert found is not None and found.value == "asthma, mild"
    assert (local.privacy, default.privacy) == ("local", None)
    with pytest.raises(ValueError, match="privacy must be one of local, shared"):
        HubBackend(hub.url, hub.token, privacy="private")
