"""Django's SQLite backend with the hub's writers taking turns promptly.

SQLite lets one writer in at a time. A writer that finds the database locked is put to sleep by
SQLite's busy handler and tries again after 1, 2, 5, 10, 15 ... ms, however soon the lock is free, so
two web workers writing at once lose milliseconds on most writes while a core idles. Here each write
first takes an exclusive lock (flock) on a file beside the database, `<name>-writer`, which the kernel
hands to the next waiter the moment it is let go (a writer first asks again after pauses of 50 to 500
microseconds, for 5 ms, as most writes are shorter than that): a transaction (atomic) before its BEGIN IMMEDIATE,
until its commit, rollback or close; a statement that writes outside a transaction (an UPDATE in
autocommit, as the worker's lease renewals run) for that statement. Then SQLite's own lock as before,
so a program that does not take the file's lock (the sqlite3 shell, a backup) is still kept out, and
waits on the busy handler as it always did. The lock goes with the process, should it die.

A writer waits for the file's lock at most the connection's busy timeout (SQLITE_BUSY_TIMEOUT), then
fails as SQLite would, with "database is locked". When the lock file cannot be opened (a folder the
process may read but not write), writers fall back to SQLite's own lock alone.

An in-memory database has no file beside it and is left to SQLite.

The methods extended are Django's own (django.db.backends.sqlite3.base and base.base), which the type
stubs leave out: hence the ignores on their super() calls.
"""

import fcntl
import logging
import os
import threading
import time
import weakref
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from django.db import OperationalError
from django.db.backends.sqlite3 import base

logger = logging.getLogger(__name__)

WRITER_SUFFIX = "-writer"
# A writer that finds the lock taken asks again for this long, after short pauses, before it waits in the kernel
# on a thread of its own (_writer_wait): a write holds the lock for about half a millisecond, and starting that
# thread cost a busy server more than most waits (a fifth of a PUT's time in its view, with two workers writing).
WRITER_POLL_SECONDS = 0.005
WRITER_POLL_FIRST_PAUSE = 0.00005
WRITER_POLL_LONGEST_PAUSE = 0.0005
# The first word of a statement that writes (a statement that writes in autocommit takes the lock for itself).
WRITING_STATEMENTS = frozenset(
    ("INSERT", "UPDATE", "DELETE", "REPLACE", "CREATE", "DROP", "ALTER", "VACUUM", "REINDEX", "ANALYZE")
)


def _writes(sql: str) -> bool:
    first = sql.lstrip()[:8].split(None, 1)
    return bool(first) and first[0].upper() in WRITING_STATEMENTS


class WriterQueuedCursor(base.SQLiteCursorWrapper):
    """Takes the writers' lock around a statement that writes outside a transaction."""

    database: "DatabaseWrapper"

    # The signatures of Django's SQLiteCursorWrapper, which its stubs mark as overriding sqlite3.Cursor's too.
    def execute(  # type: ignore[override]
        self, query: str, params: Iterable[object] | None = None
    ) -> base.SQLiteCursorWrapper:
        if not _writes(query):
            return super().execute(query, params)
        with self.database.writing_statement():
            return super().execute(query, params)

    def executemany(  # type: ignore[override]
        self, query: str, param_list: Iterable[Iterable[object]]
    ) -> base.SQLiteCursorWrapper:
        if not _writes(query):
            return super().executemany(query, param_list)
        with self.database.writing_statement():
            return super().executemany(query, param_list)


class DatabaseWrapper(base.DatabaseWrapper):
    _writer_fd: int | None = None
    _writer_closer: weakref.finalize | None = None
    _writing = False
    # Whether the lock file could not be opened (then writers rely on SQLite's own lock alone).
    _writer_unavailable = False

    def create_cursor(self, name: str | None = None) -> WriterQueuedCursor:
        cursor = self.connection.cursor(factory=WriterQueuedCursor)
        cursor.database = self
        return cursor

    @contextmanager
    def writing_statement(self) -> Iterator[None]:
        """The writers' lock for one statement in autocommit (none inside a transaction, which holds it)."""
        if not self.autocommit or self._writing:
            yield
            return
        self._writer_enter()
        try:
            yield
        finally:
            self._writer_leave()

    def _writer_lock_path(self) -> str | None:
        name = str(self.settings_dict["NAME"])
        if not name or self.is_in_memory_db():
            return None
        return name + WRITER_SUFFIX

    def _writer_open(self, path: str) -> int | None:
        """The lock file, made with the database file's permissions and owner (as SQLite makes its -wal and
        -shm files), so every account that may write the database may take it; None when it cannot be."""
        database = path[: -len(WRITER_SUFFIX)]
        try:
            mode = os.stat(database).st_mode & 0o666
        except OSError:
            mode = 0o600
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, mode)
        except OSError as error:
            if not self._writer_unavailable:
                logger.warning("writers use SQLite's own lock alone: cannot open %s (%s)", path, error)
            self._writer_unavailable = True
            return None
        try:
            owner = os.stat(database)
            if os.geteuid() == 0 and (os.fstat(fd).st_uid, os.fstat(fd).st_gid) != (owner.st_uid, owner.st_gid):
                os.fchown(fd, owner.st_uid, owner.st_gid)
        except OSError:
            pass  # the lock works whoever owns the file; another account may just not open it
        self._writer_closer = weakref.finalize(self, os.close, fd)
        return fd

    def _writer_enter(self) -> None:
        if self._writing or self._writer_unavailable:
            return
        path = self._writer_lock_path()
        if path is None:
            return
        if self._writer_fd is None:
            self._writer_fd = self._writer_open(path)
            if self._writer_fd is None:
                return
        timeout = float(self.settings_dict["OPTIONS"].get("timeout", 5))
        polled = min(WRITER_POLL_SECONDS, timeout)
        if not self._writer_poll(polled):
            self._writer_wait(timeout - polled)
        self._writing = True

    def _writer_poll(self, seconds: float) -> bool:
        """Whether the writers' lock was taken within `seconds`, asking for it again after pauses that double
        from WRITER_POLL_FIRST_PAUSE to WRITER_POLL_LONGEST_PAUSE."""
        assert self._writer_fd is not None
        deadline = time.monotonic() + seconds
        pause = WRITER_POLL_FIRST_PAUSE
        while True:
            try:
                fcntl.flock(self._writer_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                pass
            else:
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(pause, left))
            pause = min(pause * 2, WRITER_POLL_LONGEST_PAUSE)

    def _writer_wait(self, timeout: float) -> None:
        """Wait for the writers' lock in the kernel, which hands it over the moment its holder lets go: on a
        thread of its own (a daemon, which never holds up the process's exit), so the busy timeout still
        holds here. The thread waits on a copy of the descriptor, which it closes once its wait ends; when
        this one gives up (the timeout, or an interrupt), it lets go of its own descriptor, so the lock the
        thread may still get goes with the thread's copy."""
        assert self._writer_fd is not None
        waiter_fd = os.dup(self._writer_fd)
        taken = threading.Event()

        def wait() -> None:
            try:
                fcntl.flock(waiter_fd, fcntl.LOCK_EX)
                taken.set()
            finally:
                os.close(waiter_fd)

        try:
            threading.Thread(target=wait, name="sqlite-writer", daemon=True).start()
        except BaseException:
            os.close(waiter_fd)
            raise
        try:
            if taken.wait(timeout):
                return
        except BaseException:
            self._writer_abandon()
            raise
        self._writer_abandon()
        raise OperationalError("database is locked")

    def _writer_abandon(self) -> None:
        """Let go of this connection's descriptor of the lock file (a wait on it given up)."""
        if self._writer_closer is not None:
            self._writer_closer()
        self._writer_fd = self._writer_closer = None

    def _writer_leave(self) -> None:
        if self._writing:
            self._writing = False
            if self._writer_fd is not None:
                fcntl.flock(self._writer_fd, fcntl.LOCK_UN)

    def _start_transaction_under_autocommit(self) -> None:
        self._writer_enter()
        try:
            super()._start_transaction_under_autocommit()  # type: ignore[misc]
        except BaseException:
            self._writer_leave()
            raise

    def _commit(self) -> None:
        try:
            super()._commit()  # type: ignore[misc]
        finally:
            self._writer_leave()

    def _rollback(self) -> None:
        try:
            super()._rollback()  # type: ignore[misc]
        finally:
            self._writer_leave()

    def _close(self) -> None:
        try:
            super()._close()  # type: ignore[misc]
        finally:
            self._writer_leave()
            self._writer_abandon()
