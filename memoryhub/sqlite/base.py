"""Django's SQLite backend with the hub's writers taking turns promptly.

SQLite lets one writer in at a time. A writer that finds the database locked is put to sleep by
SQLite's busy handler and tries again after 1, 2, 5, 10, 15 ... ms, however soon the lock is free, so
two web workers writing at once lose milliseconds on most writes while a core idles. Here each write
transaction first takes an exclusive lock (flock) on a file beside the database, `<name>-writer`,
which the kernel hands to the next waiter the moment it is let go; then BEGIN IMMEDIATE as before,
so a program that does not take that lock (the sqlite3 shell, a backup) is still kept out by
SQLite's own. The lock goes with the transaction's end (commit, rollback, a closed connection) and
with the process, should it die. A waiter gives up as BEGIN IMMEDIATE would, after the connection's
busy timeout, with "database is locked".

An in-memory database has no file beside it and is left to SQLite.

The methods extended are Django's own (django.db.backends.sqlite3.base and base.base), which the type
stubs leave out: hence the ignores on their super() calls.
"""

import fcntl
import os
import threading

from django.db import OperationalError
from django.db.backends.sqlite3 import base

WRITER_SUFFIX = "-writer"


class DatabaseWrapper(base.DatabaseWrapper):
    _writer_fd: int | None = None
    _writing = False

    def _writer_lock_path(self) -> str | None:
        name = str(self.settings_dict["NAME"])
        if not name or self.is_in_memory_db():
            return None
        return name + WRITER_SUFFIX

    def _writer_enter(self) -> None:
        if self._writing:
            return
        path = self._writer_lock_path()
        if path is None:
            return
        if self._writer_fd is None:
            self._writer_fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(self._writer_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._writer_wait(self._writer_fd, float(self.settings_dict["OPTIONS"].get("timeout", 5)))
        self._writing = True

    def _writer_wait(self, fd: int, timeout: float) -> None:
        """Wait for the writers' lock in the kernel, which hands it over the moment its holder lets go: on a
        thread of its own (a daemon, which never holds up the process's exit), so the busy timeout still
        holds here."""
        taken = threading.Event()

        def wait() -> None:
            fcntl.flock(fd, fcntl.LOCK_EX)
            taken.set()

        threading.Thread(target=wait, name="sqlite-writer", daemon=True).start()
        if not taken.wait(timeout):
            # The thread may still get the lock: the descriptor is closed here, and the lock is let go with
            # the last reference to it, when that thread's wait ends.
            self._writer_fd = None
            os.close(fd)
            raise OperationalError("database is locked")

    def _writer_leave(self) -> None:
        if self._writing and self._writer_fd is not None:
            self._writing = False
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
            if self._writer_fd is not None:
                os.close(self._writer_fd)
                self._writer_fd = None
