"""Whether a database may have changed since a connection last looked: the mark a per-process cache keeps
beside what it read, so that it asks the database again only when the mark has moved.

SQLite: `PRAGMA data_version` moves whenever another connection, of this process or another, commits a
change, and the connection's own `total_changes` whenever it writes a row: while both hold still on one
connection, nothing was written to the database in between. There is no mark on an in-memory SQLite
database: connections to one shared in-memory database share a page cache, so its data_version would not
show another one's commits.

PostgreSQL: the current snapshot (`pg_current_snapshot()`: the transaction ids in progress, and the bound
past the latest that ended). Another transaction's writes are seen only once it has ended, and each end
(a commit or an abort) either takes an id off the list in progress or moves the bound: between two equal
snapshots no transaction ended, so no other connection's change became visible. The transaction that
asks sees its own writes at once, though, and they do not move its snapshot: while it holds an id (it
wrote), there is no mark. Vacuuming, pruning and hint bits (what the server writes without changing a
row's data) leave the snapshot as it was, so a cache is not read again for them, as it was while the mark
held the log's insert position. The snapshot is the whole server's: transactions in other databases move
it too, which only makes a cache ask again. Reading it is one round trip, where the counts it spares read
thousands of index rows (a search reads it in its own statement, memories.search.lexical). A standby
(read-only, replaying another server's log) has no mark.
"""

import sqlite3
from dataclasses import dataclass

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.sqlite3.base import DatabaseWrapper as SQLiteDatabaseWrapper

# The current snapshot, as text; NULL on a standby, and in a transaction that wrote (it sees its own writes).
# An expression, so a statement may take the mark beside what it reads (memories.search.lexical).
POSTGRES_MARK_EXPRESSION = (
    "CASE WHEN pg_is_in_recovery() OR pg_current_xact_id_if_assigned() IS NOT NULL THEN NULL "
    "ELSE pg_current_snapshot()::text END"
)
POSTGRES_MARK_SQL = f"SELECT {POSTGRES_MARK_EXPRESSION}"
# What a PostgreSQL mark is taken from: the server, whichever of its connections reads the position.
POSTGRES_SERVER = "postgresql"


@dataclass(frozen=True, eq=False)
class Mark:
    """A view of the database at one moment: of one SQLite connection, or of the PostgreSQL server."""

    # Compared by identity: a kept mark holds its SQLite connection, so the connection's id is never reused;
    # every PostgreSQL mark holds the one POSTGRES_SERVER.
    source: sqlite3.Connection | str
    version: int | str
    changes: int

    def same(self, kept: "Mark | None") -> bool:
        """Whether nothing was written to the database between kept and this mark."""
        return (
            kept is not None
            and kept.source is self.source
            and (kept.version, kept.changes) == (self.version, self.changes)
        )


def postgres_mark(value: str | None) -> Mark | None:
    """The mark of a PostgreSQL server from what POSTGRES_MARK_EXPRESSION gave (None: there is none)."""
    return None if value is None else Mark(POSTGRES_SERVER, value, 0)


def database_mark(*, round_trip: bool = True) -> Mark | None:
    """The mark of the database now, read through this thread's connection (take it before reading what it will
    vouch for: a write after it then moves the next mark); None where there is none, or, without round_trip,
    where reading it asks the server (PostgreSQL). Reads no table."""
    wrapper = connections[DEFAULT_DB_ALIAS]
    if wrapper.vendor == "postgresql":
        if not round_trip:
            return None
        with wrapper.cursor() as cursor:
            cursor.execute(POSTGRES_MARK_SQL)
            (position,) = cursor.fetchone()
        return postgres_mark(position)
    if not isinstance(wrapper, SQLiteDatabaseWrapper) or wrapper.is_in_memory_db():
        return None
    wrapper.ensure_connection()
    raw = wrapper.connection
    (version,) = raw.execute("PRAGMA data_version").fetchone()
    return Mark(raw, int(version), raw.total_changes)
