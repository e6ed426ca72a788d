"""Whether a SQLite database may have changed since a connection last looked: the mark a per-process cache
keeps beside what it read, so that it asks the database again only when the mark has moved.

`PRAGMA data_version` moves whenever another connection, of this process or another, commits a change,
and the connection's own `total_changes` whenever it writes a row: while both hold still on one
connection, nothing was written to the database in between. On other databases there is no mark (the
cache asks every time), nor on an in-memory SQLite database: connections to one shared in-memory
database share a page cache, so its data_version would not show another one's commits.
"""

import sqlite3
from dataclasses import dataclass

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.sqlite3.base import DatabaseWrapper as SQLiteDatabaseWrapper


@dataclass(frozen=True, eq=False)
class Mark:
    """One connection's view of the database at one moment."""

    # Compared by identity: a kept mark holds its connection, so the connection's id is never reused.
    connection: sqlite3.Connection
    version: int
    changes: int

    def same(self, kept: "Mark | None") -> bool:
        """Whether nothing was written to the database between kept and this mark."""
        return (
            kept is not None
            and kept.connection is self.connection
            and (kept.version, kept.changes) == (self.version, self.changes)
        )


def database_mark() -> Mark | None:
    """The mark of this thread's connection now (take it before reading what it will vouch for: a write
    after it then moves the next mark); None where there is none. Reads no table."""
    wrapper = connections[DEFAULT_DB_ALIAS]
    if not isinstance(wrapper, SQLiteDatabaseWrapper) or wrapper.is_in_memory_db():
        return None
    wrapper.ensure_connection()
    raw = wrapper.connection
    (version,) = raw.execute("PRAGMA data_version").fetchone()
    return Mark(raw, int(version), raw.total_changes)
