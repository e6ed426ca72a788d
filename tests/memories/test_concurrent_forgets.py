"""Forgetting or erasing a user while an agent writes a new memory about them, on another connection.

On PostgreSQL rows do not hold other writers back: a put of a new key commits while a forget or an erasure
of its user is half done. The put's entry and its history must then stay together: kept both (a write made
after the forget), or erased both. On SQLite the write lock makes the put wait for the end of the forget.
"""

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

from memories import services
from memories.models import MemoryEntry, MemoryEvent

# How long the forget waits for the put it started to commit (on SQLite the put waits for the forget instead).
PUT_SECONDS = 2.0


def _put_after(statement_prefix: str, owner) -> tuple[Callable[..., Any], threading.Thread]:
    """An execute wrapper that, once the forget has run its first statement starting with statement_prefix,
    has a new memory about alice put on another connection, and waits for that put to commit."""
    thread = threading.Thread(target=_put, args=(owner,))

    def wrapper(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if sql.startswith(statement_prefix) and not thread.is_alive() and thread.ident is None:
            thread.start()
            thread.join(PUT_SECONDS)
        return result

    return wrapper, thread


def _put(owner) -> None:
    try:
        services.entry_put(owner=owner, uid="alice", key="meanwhile", value="written during the forget")
    finally:
        connection.close()


def _entries_with_their_history(owner) -> dict[str, list[str]]:
    return {
        entry.key: list(
            MemoryEvent.objects.filter(owner=owner, uid="alice", key=entry.key).values_list("action", flat=True)
        )
        for entry in MemoryEntry.objects.filter(owner=owner, uid="alice")
    }


@pytest.fixture
def alice(owner):
    for number in range(20):
        services.entry_put(owner=owner, uid="alice", key=f"k{number}", value=f"note {number}")


@pytest.mark.django_db(transaction=True)
def test_a_memory_written_while_its_user_is_forgotten_stays_with_its_history(owner, alice):
    wrapper, thread = _put_after(f"SELECT {connection.ops.quote_name('memories_memoryentry')}", owner)
    with connection.execute_wrapper(wrapper):
        assert services.user_forget(owner=owner, uid="alice") == 20
    thread.join()

    # The 20 entries locked are gone (each with its delete event); the one written meanwhile is kept, with its
    # create event: it came after the forget.
    assert _entries_with_their_history(owner) == {"meanwhile": ["create"]}
    assert MemoryEvent.objects.filter(owner=owner, uid="alice", action="delete").count() == 20


@pytest.mark.django_db(transaction=True)
def test_a_memory_written_while_its_user_is_erased_is_erased_with_its_history_or_kept_with_it(owner, alice):
    wrapper, thread = _put_after(f"DELETE FROM {connection.ops.quote_name('memories_memoryentry')}", owner)
    with connection.execute_wrapper(wrapper):
        erasure = services.user_erase(owner=owner, uid="alice")
    thread.join()

    remaining = _entries_with_their_history(owner)
    # Never an entry without its history, and the erasure counts every entry it removed.
    assert remaining in ({}, {"meanwhile": ["create"]})
    assert erasure is not None
    assert erasure.entries == 20 + (0 if remaining else 1)
    erase_event = MemoryEvent.objects.get(owner=owner, uid="alice", action="erase")
    assert erase_event.entries_erased == erasure.entries
    if not remaining:
        assert list(MemoryEvent.objects.filter(owner=owner, uid="alice").values_list("action", flat=True)) == ["erase"]
