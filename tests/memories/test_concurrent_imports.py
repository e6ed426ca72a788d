"""An import while agents keep writing to the hub, each on its own database connection.

On PostgreSQL an import reads which of its keys exist, then inserts the others: an agent that created
one of them in between made the import fail with a duplicate key (IntegrityError), the rest of the file
not imported; the import now updates the entry the agent made. On SQLite the statistics the import
refreshes at its end (PRAGMA optimize) failed at once with "database is locked" when another writer
committed while it ran: the import command then exited with a traceback, its entries written.
"""

import threading
import time

import pytest
from django.db import connection, transaction

from memories import services
from memories.models import MemoryEntry, MemoryEvent
from memories.services import imports as imports_module
from memories.services.locks import USER_LOCK_BUCKETS

only_postgresql = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="on SQLite the import's transaction holds the write lock from BEGIN: no write lands in between",
)


# How long the agent's write holds the writers' turn while the statistics are refreshed.
AGENT_WRITE_SECONDS = 0.5


def _records(count: int) -> list[services.ImportRecord]:
    return [services.ImportRecord(uid="alice", key=f"k{number}", value=f"imported {number}") for number in range(count)]


@only_postgresql
@pytest.mark.django_db(transaction=True)
def test_a_key_an_agent_creates_while_the_import_runs_is_updated_by_the_import(owner, monkeypatch):
    real_existing = imports_module._existing_entries
    agent_wrote: list[BaseException | None] = []

    def existing_then_an_agent_writes(**arguments: object) -> dict:
        found = real_existing(**arguments)  # type: ignore[arg-type]
        if not agent_wrote:
            # An agent creates k3 on its own connection, after the import looked, before it inserts.
            def agent() -> None:
                try:
                    services.entry_put(owner=owner, uid="alice", key="k3", value="from the agent")
                    agent_wrote.append(None)
                except BaseException as error:  # noqa: BLE001 - handed to the test's thread
                    agent_wrote.append(error)
                finally:
                    connection.close()

            thread = threading.Thread(target=agent)
            thread.start()
            thread.join()
        return found

    monkeypatch.setattr(imports_module, "_existing_entries", existing_then_an_agent_writes)

    counts = services.entries_import(owner=owner, records=_records(10))

    assert agent_wrote == [None]
    assert (counts.created, counts.updated, counts.invalid) == (9, 1, [])
    assert MemoryEntry.objects.filter(owner=owner, uid="alice").count() == 10
    entry = MemoryEntry.objects.get(owner=owner, uid="alice", key="k3")
    assert (entry.value, entry.version) == ("imported 3", 2)
    history = MemoryEvent.objects.filter(owner=owner, uid="alice", key="k3").order_by("id")
    assert list(history.values_list("action", "version", "value_after")) == [
        ("create", 1, "from the agent"),
        ("update", 2, "imported 3"),
    ]
    # Every other key was written once, by the import: nothing of the failed try stayed.
    assert MemoryEvent.objects.filter(owner=owner, uid="alice").count() == 11


@pytest.mark.skipif(connection.vendor != "sqlite", reason="PRAGMA optimize is SQLite's")
@pytest.mark.django_db(transaction=True)
def test_the_statistics_refresh_after_an_import_waits_for_a_writer_to_finish(owner):
    services.entries_import(owner=owner, records=_records(300))
    # A query through the entries' index: PRAGMA optimize analyses the tables this connection's queries used.
    assert MemoryEntry.objects.filter(owner=owner, uid="alice", key="k7").exists()
    writing = threading.Event()
    errors: list[BaseException] = []

    def agent() -> None:
        try:
            with transaction.atomic():
                services.entry_put(owner=owner, uid="bob", key="language", value="Python")
                writing.set()
                time.sleep(AGENT_WRITE_SECONDS)
        except BaseException as error:  # noqa: BLE001 - handed to the test's thread
            errors.append(error)
        finally:
            writing.set()
            connection.close()

    thread = threading.Thread(target=agent)
    thread.start()
    writing.wait()
    try:
        services.search_statistics_refresh()
    finally:
        thread.join()

    assert errors == []
    assert MemoryEntry.objects.filter(owner=owner).count() == 301


@only_postgresql
@pytest.mark.django_db
def test_an_import_of_many_users_takes_a_bounded_number_of_locks(owner, monkeypatch):
    # PostgreSQL keeps every lock a transaction takes in one table shared by all connections (about
    # max_locks_per_transaction x max_connections: 6,400 by default); a lock for each of a chunk's 5,000 users
    # would leave the hub's other requests "out of shared memory", and a larger --chunk-size fail the import.
    real_round = imports_module._import_round
    held: list[int] = []

    def round_counting_locks(**arguments: object) -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()")
            held.append(cursor.fetchone()[0])
        real_round(**arguments)  # type: ignore[arg-type]

    monkeypatch.setattr(imports_module, "_import_round", round_counting_locks)
    records = [services.ImportRecord(uid=f"user{number}", key="k", value="v") for number in range(1000)]

    counts = services.entries_import(owner=owner, records=records)

    assert counts.created == 1000
    assert 1 <= max(held) <= USER_LOCK_BUCKETS
