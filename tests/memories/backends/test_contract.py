"""The backend contract, run against every backend that stores (local, and honcho on the double)."""

import pytest

from memories.backends.base import BackendEntry, MemoryBackend
from memories.backends.local import LocalBackend


def keys(entries: list[BackendEntry]) -> list[str]:
    return [entry.key for entry in entries]


def test_it_is_available_and_says_why(backend: MemoryBackend):
    availability = backend.available()
    assert availability.ok is True
    assert availability.reason


def test_a_stored_entry_comes_back(backend: MemoryBackend):
    stored = backend.put("alice", "language", "prefers Python", kind="fact", meta={"source": "chat"})
    entry = backend.get("alice", "language")
    assert entry is not None
    assert (entry.uid, entry.key, entry.value, entry.kind, entry.meta) == (
        "alice",
        "language",
        "prefers Python",
        "fact",
        {"source": "chat"},
    )
    assert entry.version == stored.version == 1


def test_a_second_put_replaces_the_value_and_keeps_kind_and_meta(backend: MemoryBackend):
    backend.put("alice", "editor", "vim", kind="tool", meta={"since": 2020})
    backend.put("alice", "editor", "emacs")
    entry = backend.get("alice", "editor")
    assert (entry.value, entry.kind, entry.meta, entry.version) == ("emacs", "tool", {"since": 2020}, 2)


def test_a_missing_key_answers_none(backend: MemoryBackend):
    backend.put("alice", "editor", "vim")
    assert backend.get("alice", "shell") is None
    assert backend.get("bob", "editor") is None


def test_find_matches_key_or_value_in_any_case_in_the_backends_order(backend: MemoryBackend):
    backend.put("alice", "language", "prefers Python")
    backend.put("alice", "editor", "uses vim")
    backend.put("alice", "pythonpath", "/opt/lib")
    for uid in ("alice", "bob"):
        backend.settle(uid)
    found = keys(backend.find("alice", "PYTHON"))
    if isinstance(backend, LocalBackend):
        # The hub's ranked search: the whole word first, then what holds it inside a longer word.
        assert found == ["language", "pythonpath"]
    else:
        assert found == ["pythonpath", "language"]  # newest first, as the reference's scan
    assert keys(backend.find("alice", "vim")) == ["editor"]
    assert backend.find("alice", "rust") == []
    assert backend.find("bob", "python") == []


def test_find_returns_at_most_the_limit(backend: MemoryBackend):
    for number in range(5):
        backend.put("alice", f"note-{number}", "a note")
    assert keys(backend.find("alice", "note", limit=2)) == ["note-4", "note-3"]


def test_list_holds_every_entry_of_the_uid_newest_first(backend: MemoryBackend):
    backend.put("alice", "first", "1")
    backend.put("alice", "second", "2")
    backend.put("bob", "other", "3")
    backend.put("alice", "first", "1 again")
    assert keys(backend.list("alice")) == ["first", "second"]
    assert keys(backend.list("carol")) == []


def test_delete_removes_the_entry_and_says_whether_there_was_one(backend: MemoryBackend):
    backend.put("alice", "editor", "vim")
    assert backend.delete("alice", "editor") is True
    assert backend.get("alice", "editor") is None
    assert backend.list("alice") == []
    assert backend.delete("alice", "editor") is False


def test_a_deleted_key_can_be_stored_again(backend: MemoryBackend):
    backend.put("alice", "editor", "vim")
    backend.delete("alice", "editor")
    backend.put("alice", "editor", "helix")
    entry = backend.get("alice", "editor")
    assert entry.value == "helix"
    # The hub's own store never hands out a version again (its history goes on); Honcho keeps none.
    assert entry.version == (2 if isinstance(backend, LocalBackend) else 1)


def test_one_account_never_sees_another_accounts_entries(backend_for, owner, stranger):
    mine, theirs = backend_for(owner), backend_for(stranger)
    mine.put("alice", "editor", "vim")
    assert theirs.get("alice", "editor") is None
    assert theirs.find("alice", "vim") == []
    assert theirs.list("alice") == []
    assert theirs.delete("alice", "editor") is False
    assert mine.get("alice", "editor").value == "vim"


@pytest.mark.parametrize("uid", ["discord:1234", "élodie", "a b/c"])
def test_any_uid_the_hub_accepts_works(backend: MemoryBackend, uid: str):
    backend.put(uid, "colour", "blue")
    assert backend.get(uid, "colour").value == "blue"
    assert keys(backend.find(uid, "BLUE")) == ["colour"]
