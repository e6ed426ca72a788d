"""On SQLite, writers take turns through a lock beside the database: the next one goes in as soon as the
last lets go, one that waits too long is told the database is locked, and nothing is half-written."""

import fcntl
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from django.db import OperationalError, connection, connections, transaction
from django.db.utils import ConnectionHandler

from memoryhub.sqlite.base import WRITER_SUFFIX

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(connection.vendor != "sqlite", reason="the writers' lock is SQLite's backend")


@pytest.fixture
def unblocked(django_db_blocker):
    """Connections of the tests' own, to databases of their own (not the test database)."""
    with django_db_blocker.unblock():
        yield


@pytest.fixture
def database(tmp_path, settings, unblocked) -> dict:
    """A settings entry for a SQLite file of its own with one table, as the hub configures one."""
    entry = {
        "ENGINE": settings.SQLITE_ENGINE,
        "NAME": str(tmp_path / "writers.sqlite3"),
        "OPTIONS": {**settings.SQLITE_OPTIONS, "timeout": 1},
    }
    setup = _connection(entry)
    with setup.cursor() as cursor:
        cursor.execute("CREATE TABLE note (id INTEGER PRIMARY KEY, text TEXT NOT NULL)")
    setup.close()
    return entry


def _connection(entry: dict):
    return ConnectionHandler({"default": dict(entry)})["default"]


def _notes(entry: dict) -> list[str]:
    reader = _connection(entry)
    try:
        with reader.cursor() as cursor:
            cursor.execute("SELECT text FROM note ORDER BY id")
            return [row[0] for row in cursor.fetchall()]
    finally:
        reader.close()


def _holder(entry: dict, seconds: float) -> subprocess.Popen:
    """Another process holding the writers' lock for `seconds`, as a writer in its transaction does."""
    code = (
        "import fcntl, os, sys, time; "
        f"fd = os.open({entry['NAME'] + WRITER_SUFFIX!r}, os.O_RDWR | os.O_CREAT); "
        "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); "
        f"time.sleep({seconds})"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


class _atomic:
    """An outermost transaction.atomic, on a connection made outside django.db.connections."""

    def __init__(self, wrapper) -> None:
        self.wrapper = wrapper

    def __enter__(self) -> None:
        self.wrapper.set_autocommit(False, force_begin_transaction_with_broken_autocommit=True)

    def __exit__(self, kind, error, trace) -> None:
        if kind is None:
            self.wrapper.commit()
        else:
            self.wrapper.rollback()
        self.wrapper.set_autocommit(True)


def test_a_writer_waits_for_the_one_before_and_goes_in_as_it_lets_go(database) -> None:
    holder = _holder(database, 0.3)
    writer = _connection(database)
    try:
        started = time.monotonic()
        with _atomic(writer), writer.cursor() as cursor:
            cursor.execute("INSERT INTO note (text) VALUES ('after the holder')")
        waited = time.monotonic() - started
    finally:
        writer.close()
        holder.wait(timeout=10)
    assert 0.2 <= waited < 0.9
    assert _notes(database) == ["after the holder"]


def test_a_writer_behind_a_short_write_goes_in_as_it_lets_go(database) -> None:
    """Most writes hold the lock for well under the 5 ms a writer asks again for, before it waits on a thread."""
    fd = os.open(database["NAME"] + WRITER_SUFFIX, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    letting_go = threading.Timer(0.002, fcntl.flock, args=(fd, fcntl.LOCK_UN))
    writer = _connection(database)
    try:
        letting_go.start()
        started = time.monotonic()
        with _atomic(writer), writer.cursor() as cursor:
            cursor.execute("INSERT INTO note (text) VALUES ('after a short write')")
        waited = time.monotonic() - started
    finally:
        letting_go.join()
        writer.close()
        os.close(fd)
    assert 0.001 <= waited < 0.2
    assert _notes(database) == ["after a short write"]


def test_a_writer_that_waits_past_the_busy_timeout_is_told_the_database_is_locked_and_writes_later(database):
    holder = _holder(database, 2.5)
    writer = _connection(database)
    try:
        started = time.monotonic()
        with pytest.raises(OperationalError, match="database is locked"), _atomic(writer), writer.cursor() as cursor:
            cursor.execute("INSERT INTO note (text) VALUES ('never')")
        assert 0.9 <= time.monotonic() - started < 2.0
        holder.wait(timeout=10)
        with _atomic(writer), writer.cursor() as cursor:
            cursor.execute("INSERT INTO note (text) VALUES ('once it was free')")
    finally:
        writer.close()
        holder.kill()
    assert _notes(database) == ["once it was free"]


def test_the_lock_goes_with_a_rollback_and_with_a_closed_connection(database) -> None:
    first, second = _connection(database), _connection(database)
    try:
        with pytest.raises(ZeroDivisionError), _atomic(first):
            with first.cursor() as cursor:
                cursor.execute("INSERT INTO note (text) VALUES ('rolled back')")
            1 / 0  # noqa: B018 - a failure inside the transaction
        with _atomic(second), second.cursor() as cursor:
            cursor.execute("INSERT INTO note (text) VALUES ('after a rollback')")
        # a transaction begun, then its connection closed
        first.set_autocommit(False, force_begin_transaction_with_broken_autocommit=True)
        first.close()
        with _atomic(second), second.cursor() as cursor:
            cursor.execute("INSERT INTO note (text) VALUES ('after a close')")
    finally:
        first.close()
        second.close()
    assert _notes(database) == ["after a rollback", "after a close"]


def test_writers_on_threads_of_one_process_take_turns_and_all_get_in(database) -> None:
    inside = 0
    most_inside = 0
    count_lock = threading.Lock()
    failures: list[BaseException] = []

    def write(number: int) -> None:
        nonlocal inside, most_inside
        wrapper = _connection(database)
        try:
            for round_number in range(10):
                with _atomic(wrapper):
                    with count_lock:
                        inside += 1
                        most_inside = max(most_inside, inside)
                    with wrapper.cursor() as cursor:
                        cursor.execute("INSERT INTO note (text) VALUES (%s)", [f"{number}-{round_number}"])
                    time.sleep(0.002)
                    with count_lock:
                        inside -= 1
        except BaseException as error:  # noqa: BLE001 - reported by the test below
            failures.append(error)
        finally:
            wrapper.close()

    threads = [threading.Thread(target=write, args=(number,)) for number in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert failures == []
    assert most_inside == 1
    assert len(_notes(database)) == 40


def test_a_write_outside_a_transaction_waits_its_turn_and_a_read_does_not(database) -> None:
    holder = _holder(database, 0.4)
    connection_ = _connection(database)
    try:
        started = time.monotonic()
        with connection_.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM note")
        read_took = time.monotonic() - started
        with connection_.cursor() as cursor:
            cursor.execute("INSERT INTO note (text) VALUES ('in autocommit')")
        write_took = time.monotonic() - started
    finally:
        connection_.close()
        holder.wait(timeout=10)
    assert read_took < 0.2
    assert write_took >= 0.25
    assert _notes(database) == ["in autocommit"]


def test_the_lock_file_takes_the_databases_permissions(database) -> None:
    os.chmod(database["NAME"], 0o660)
    lock_path = Path(database["NAME"] + WRITER_SUFFIX)
    lock_path.unlink(missing_ok=True)
    old_umask = os.umask(0o002)
    writer = _connection(database)
    try:
        with _atomic(writer), writer.cursor() as cursor:
            cursor.execute("INSERT INTO note (text) VALUES ('made the lock file')")
    finally:
        os.umask(old_umask)
        writer.close()
    assert lock_path.stat().st_mode & 0o777 == 0o660


def test_writers_fall_back_to_sqlites_own_lock_when_the_lock_file_cannot_be_opened(database) -> None:
    # Something that is not a file stands where the lock file goes.
    Path(database["NAME"] + WRITER_SUFFIX).unlink(missing_ok=True)
    os.mkdir(database["NAME"] + WRITER_SUFFIX)
    writer = _connection(database)
    try:
        with _atomic(writer), writer.cursor() as cursor:
            cursor.execute("INSERT INTO note (text) VALUES ('written all the same')")
        assert writer._writer_fd is None and writer._writer_unavailable
    finally:
        writer.close()
    assert _notes(database) == ["written all the same"]


def test_an_in_memory_database_has_no_lock_file(settings, unblocked) -> None:
    wrapper = _connection({"ENGINE": settings.SQLITE_ENGINE, "NAME": ":memory:", "OPTIONS": {}})
    try:
        with _atomic(wrapper), wrapper.cursor() as cursor:
            cursor.execute("CREATE TABLE note (id INTEGER PRIMARY KEY)")
        assert wrapper._writer_fd is None
    finally:
        wrapper.close()


def _lock_is_free() -> bool:
    probe = os.open(connections["default"].settings_dict["NAME"] + WRITER_SUFFIX, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(probe)
    return True


@pytest.mark.django_db(transaction=True)
def test_the_lock_is_held_by_an_atomic_block_and_free_after_savepoints_rollbacks_and_commit_hooks() -> None:
    from django.contrib.auth.models import User

    def hook() -> None:
        # After the commit: the lock is free, and a write made here (in autocommit) takes it again.
        written.append(_lock_is_free())
        User.objects.create(username="written-after-commit")

    written: list[bool] = []
    with transaction.atomic():
        assert not _lock_is_free()
        with pytest.raises(ZeroDivisionError), transaction.atomic():
            1 / 0  # noqa: B018 - a savepoint rolled back
        assert not _lock_is_free()
        transaction.on_commit(hook)
    assert written == [True]
    assert User.objects.filter(username="written-after-commit").exists()
    assert _lock_is_free()
    with pytest.raises(ZeroDivisionError), transaction.atomic():
        1 / 0  # noqa: B018 - the outermost block rolled back
    assert _lock_is_free()
    with transaction.atomic():
        transaction.set_rollback(True)
    assert _lock_is_free()


@pytest.mark.django_db
def test_the_hubs_own_connection_takes_the_lock_in_its_transactions() -> None:
    path = connections["default"].settings_dict["NAME"] + WRITER_SUFFIX
    with transaction.atomic():
        connection.ensure_connection()
        probe = os.open(path, os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(probe)
