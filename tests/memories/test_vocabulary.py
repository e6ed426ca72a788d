"""The words a user's entries hold, kept per process for typos: they follow every write, for that user alone."""

import threading
from datetime import timedelta

import pytest
from django.db import connections
from django.utils import timezone

from memories import selectors, services
from memories.models import MemoryEntry
from memories.search import lexical
from memories.search.vocabulary import user_words, user_words_clear


@pytest.fixture(autouse=True)
def _nothing_kept():
    user_words_clear()
    yield
    user_words_clear()


def _words(owner, uid: str = "alice") -> set[str]:
    return set(user_words(owner.pk, uid, lexical._words_of))


def _found(owner, query_text: str) -> list[str]:
    return [entry.key for entry in selectors.entry_find(owner=owner, uid="alice", query_text=query_text)]


def _put_from_another_connection(owner, key: str, value: str) -> None:
    """The put on another thread, so on another connection, as another request of the same server would write."""

    def write() -> None:
        try:
            services.entry_put(owner=owner, uid="alice", key=key, value=value)
        finally:
            connections.close_all()

    writer = threading.Thread(target=write)
    writer.start()
    writer.join()


def test_the_words_follow_creates_changes_and_removals(owner):
    assert _words(owner) == set()
    services.entry_put(owner=owner, uid="alice", key="drink", value="takes her coffee black")
    assert {"drink", "takes", "her", "coffee", "black"} <= _words(owner)
    services.entry_put(owner=owner, uid="alice", key="sport", value="runs marathons")
    assert {"coffee", "sport", "marathons"} <= _words(owner)
    services.entry_put(owner=owner, uid="alice", key="drink", value="green tea")
    assert {"green", "tea", "marathons"} <= _words(owner)
    services.entry_delete(owner=owner, uid="alice", key="drink")
    # a removal reads the user's words anew: the removed entry's, and its old value's, are gone
    assert _words(owner) == {"sport", "runs", "marathons"}


def test_entries_added_with_older_times_are_read_too(owner):
    services.entry_put(owner=owner, uid="alice", key="drink", value="takes her coffee black")
    assert "coffee" in _words(owner)
    services.entry_put(owner=owner, uid="alice", key="pet", value="a golden retriever")
    services.entry_put(owner=owner, uid="alice", key="city", value="lives in Lisbon")
    # as an import of a backup leaves them: older than the newest entry the words were read at
    long_ago = timezone.now() - timedelta(days=400)
    MemoryEntry.objects.filter(owner=owner, key__in=["pet", "city"]).update(updated=long_ago)
    assert {"coffee", "retriever", "lisbon"} <= _words(owner)


def test_a_typo_of_a_word_written_after_a_search_is_found_at_once(owner):
    services.entry_put(owner=owner, uid="alice", key="drink", value="green tea")
    assert _found(owner, "cofee") == []
    services.entry_put(owner=owner, uid="alice", key="breakfast", value="coffee and toast")
    assert _found(owner, "cofee") == ["breakfast"]
    services.entry_delete(owner=owner, uid="alice", key="breakfast")
    assert _found(owner, "cofee") == []


def test_one_users_words_are_never_anothers(owner, stranger):
    services.entry_put(owner=owner, uid="alice", key="drink", value="takes her coffee black")
    services.entry_put(owner=owner, uid="bob", key="drink", value="peppermint tea")
    services.entry_put(owner=stranger, uid="alice", key="drink", value="espresso")
    assert "peppermint" not in _words(owner) and "espresso" not in _words(owner)
    assert _words(owner, "bob") == {"drink", "peppermint", "tea"}
    assert _words(stranger) == {"drink", "espresso"}


@pytest.mark.django_db(transaction=True)
def test_a_word_another_connection_writes_is_seen_at_once(owner):
    # Words kept while the database is unchanged are reused; a write by another connection (another
    # thread, as another request of the same server would be) changes the database, so it is seen.
    services.entry_put(owner=owner, uid="alice", key="drink", value="green tea")
    assert _found(owner, "cofee") == []
    assert _found(owner, "cofee") == []

    _put_from_another_connection(owner, "breakfast", "coffee and toast")
    assert "coffee" in _words(owner)
    assert _found(owner, "cofee") == ["breakfast"]
    # nothing written since: the kept words answer, and the typo is found the same way
    assert _found(owner, "cofee") == ["breakfast"]
    assert _found(owner, "coffee breakfst") == ["breakfast"]


@pytest.mark.django_db(transaction=True)
def test_a_typo_of_a_word_another_connection_wrote_since_the_last_search_is_found_by_the_next(owner):
    # The search finds its variants in the words it kept, and reads the database's mark with its candidates:
    # another connection's write in between moves the mark, so the words are checked again at once.
    services.entry_put(owner=owner, uid="alice", key="drink", value="green tea")
    assert _found(owner, "cofee") == []

    _put_from_another_connection(owner, "breakfast", "coffee and toast")
    assert _found(owner, "cofee") == ["breakfast"]
    assert _found(owner, "wich cofee") == ["breakfast"]
