"""Batches that name the same keys in other orders, at the same time, each on its own database connection.

On PostgreSQL a batch locks each entry as it reaches it: two batches that took their first keys and then
wanted each other's were a deadlock, and the one PostgreSQL chose to abort answered 500. Both must be
applied, one after the other, whatever the order of their operations.
"""

import contextlib
import threading
import time

import pytest
from django.db import connection

from memories import services
from memories.models import MemoryEntry, MemoryEvent
from memories.services import batch as batch_module

# How long a batch that has applied its first operation waits for the other to have applied its own.
# With the batches serialized the other never gets there: the wait runs out and the batch goes on.
MEET_SECONDS = 1.5
FORGET_LOCKS_SECONDS = 0.5


def _run_together(owner, batches: list[list[services.BatchOperation]], monkeypatch) -> list[BaseException]:
    """Run each batch in a thread of its own; each pauses after its first operation until the other has
    applied one too (or MEET_SECONDS passed), the interleaving that makes two batches wait on each other."""
    meet = threading.Barrier(len(batches), timeout=MEET_SECONDS)
    first_done = threading.local()
    real_put = batch_module.entry_put

    def put_then_meet(**arguments: object) -> services.PutResult:
        result = real_put(**arguments)  # type: ignore[arg-type]
        if not getattr(first_done, "value", False):
            first_done.value = True
            with contextlib.suppress(threading.BrokenBarrierError):
                meet.wait()
        return result

    monkeypatch.setattr(batch_module, "entry_put", put_then_meet)
    errors: list[BaseException] = []

    def run(operations: list[services.BatchOperation]) -> None:
        try:
            services.entries_batch(owner=owner, uid="alice", operations=operations, actor=owner)
        except BaseException as error:  # noqa: BLE001 - handed to the test's thread to fail it
            errors.append(error)
        finally:
            connection.close()

    threads: list[threading.Thread] = [threading.Thread(target=run, args=(each,)) for each in batches]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def _puts(keys: list[str], value: str) -> list[services.BatchOperation]:
    return [services.BatchOperation(op="put", key=key, value=value) for key in keys]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("existing", [True, False], ids=["existing keys", "new keys"])
def test_two_batches_naming_the_same_keys_in_opposite_orders_are_both_applied(owner, monkeypatch, existing):
    if existing:
        for key in ("first", "second"):
            services.entry_put(owner=owner, uid="alice", key=key, value="before")
    errors = _run_together(owner, [_puts(["first", "second"], "one"), _puts(["second", "first"], "two")], monkeypatch)

    assert errors == []
    base = 1 if existing else 0
    for key in ("first", "second"):
        entry = MemoryEntry.objects.get(owner=owner, uid="alice", key=key)
        assert entry.version == base + 2
        # Both batches' values are in the history, in the order they were applied.
        versions = MemoryEvent.objects.filter(owner=owner, uid="alice", key=key).order_by("id")
        assert list(versions.values_list("version", flat=True)) == list(range(1, base + 3))
    # One batch went wholly before the other: both keys end with the same batch's value.
    assert len(set(MemoryEntry.objects.filter(owner=owner, uid="alice").values_list("value", flat=True))) == 1


@pytest.mark.django_db(transaction=True)
def test_a_batch_and_a_forget_of_its_user_at_once_both_complete(owner, monkeypatch):
    for key in ("first", "second", "third"):
        services.entry_put(owner=owner, uid="alice", key=key, value="before")
    real_put = batch_module.entry_put
    took_first = threading.Event()
    forget_started = threading.Event()

    def put_then_let_forget_in(**arguments: object) -> services.PutResult:
        result = real_put(**arguments)  # type: ignore[arg-type]
        if not took_first.is_set():
            took_first.set()
            forget_started.wait(MEET_SECONDS)
            # Time for the forget to lock what it can and wait on the rest.
            time.sleep(FORGET_LOCKS_SECONDS)
        return result

    monkeypatch.setattr(batch_module, "entry_put", put_then_let_forget_in)
    errors: list[BaseException] = []
    forgotten: list[int] = []

    def batch() -> None:
        try:
            # The last key first: a batch that locked as it went held "third" while wanting "first".
            services.entries_batch(owner=owner, uid="alice", operations=_puts(["third", "first"], "batch"), actor=owner)
        except BaseException as error:  # noqa: BLE001
            errors.append(error)
        finally:
            connection.close()

    def forget() -> None:
        try:
            took_first.wait(MEET_SECONDS)
            forget_started.set()
            forgotten.append(services.user_forget(owner=owner, uid="alice", actor=owner))
        except BaseException as error:  # noqa: BLE001
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=batch), threading.Thread(target=forget)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert forgotten == [3]
    assert not MemoryEntry.objects.filter(owner=owner, uid="alice").exists()
