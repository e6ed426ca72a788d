"""The local backend's find is the hub's ranked search: what ?q= and the tool's query answer."""

import pytest
from django.contrib.auth.models import User

from memories import selectors
from memories.backends.local import LocalBackend


@pytest.fixture
def local(owner: User) -> LocalBackend:
    backend = LocalBackend(owner=owner)
    backend.put("alice", "pet", "has a golden retriever called Miso")
    backend.put("alice", "editor", "uses vim with a handful of plugins")
    backend.put("alice", "language", "prefers Python, writes Rust on weekends")
    return backend


def test_with_embeddings_on_find_answers_a_question_by_meaning_once_settled(local: LocalBackend, settings) -> None:
    settings.MEMORYHUB_EMBEDDINGS = "local"
    assert [entry.key for entry in local.find("alice", "what kind of dog")] == []  # no vector yet, no shared word
    local.settle("alice")
    assert [entry.key for entry in local.find("alice", "what kind of dog")] == ["pet"]


def test_find_answers_as_the_api_ranks(local: LocalBackend, owner: User, settings) -> None:
    settings.MEMORYHUB_EMBEDDINGS = "local"
    local.settle("alice")
    for query_text in ("python rust", "which editor does she use", "what kind of dog"):
        ranked = [entry.key for entry in selectors.entry_find(owner=owner, uid="alice", query_text=query_text)[:10]]
        assert [entry.key for entry in local.find("alice", query_text)] == ranked


def test_with_embeddings_off_find_is_by_words_and_settle_does_nothing(local: LocalBackend, settings) -> None:
    settings.MEMORYHUB_EMBEDDINGS = "off"
    local.settle("alice")
    assert [entry.key for entry in local.find("alice", "python rust")] == ["language"]
    assert local.find("alice", "what kind of dog") == []


def test_a_failing_endpoint_leaves_find_answering_by_words(local: LocalBackend, settings) -> None:
    settings.MEMORYHUB_EMBEDDINGS = "openai"
    settings.MEMORYHUB_EMBEDDINGS_URL, settings.MEMORYHUB_EMBEDDINGS_MODEL = "http://127.0.0.1:9", "none"
    local.settle("alice")  # logs, never raises
    assert [entry.key for entry in local.find("alice", "vim")] == ["editor"]
