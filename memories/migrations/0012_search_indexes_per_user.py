"""SQLite: both search indexes keyed by user, so a search reads one user's part of each.

memories_memoryentry_fts (trigram, substrings) held every entry of the hub under the entry's id, so a
substring search read every entry of the hub holding the substring's trigrams, then kept the user's;
memories_memoryentry_words (words) narrowed to one user through its scope token, whose bm25 weight
is nil but whose document count bm25 still read on every query (every entry of the user). Both
become contentless indexes whose rowid is (the user's number << 32) + the entry's id: one user's rows
form one range of rowids, and FTS5 reads only that range of each list (a MATCH with rowid BETWEEN).
The user's number comes from memories_searchscope, one row per account and uid, written by the
entry triggers as a user's first entry is written (never removed: a number is never given twice).
Entry ids stay below 2**32, which the rowid's low half holds. The words index keeps its scope
column and token, so bm25 scores every entry exactly as before. Both indexes are merged into one
segment each once built ('optimize'), as after any bulk load.

PostgreSQL is untouched: its pg_trgm indexes and the (owner, uid) index already narrow each search.
"""

from collections.abc import Callable

from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

ENTRY_TABLE = "memories_memoryentry"
FTS_TABLE = "memories_memoryentry_fts"
WORDS_TABLE = "memories_memoryentry_words"
SCOPE_TABLE = "memories_searchscope"
SCOPE = "'s' || {row}.owner_id || 'x' || hex({row}.uid)"
USER_ROWID = f"((SELECT id FROM {SCOPE_TABLE} WHERE owner_id = {{row}}.owner_id AND uid = {{row}}.uid) * 4294967296 + {{row}}.id)"
TRIGGERS = ("memories_memoryentry_fts_update", "memories_memoryentry_fts_delete", "memories_memoryentry_fts_insert")


def _index_rows(row: str) -> str:
    """The statements writing one entry's rows of both indexes (row: new)."""
    return f"""
        INSERT INTO {FTS_TABLE}(rowid, key_folded, value_folded)
            VALUES ({USER_ROWID.format(row=row)}, {row}.key_folded, {row}.value_folded);
        INSERT INTO {WORDS_TABLE}(rowid, scope, key, value)
            VALUES ({USER_ROWID.format(row=row)}, {SCOPE.format(row=row)}, {row}.key_folded, {row}.value_folded);"""


def _index_rows_delete(row: str) -> str:
    """The statements taking one entry's rows out of both indexes (row: old)."""
    return f"""
        INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, key_folded, value_folded)
            VALUES ('delete', {USER_ROWID.format(row=row)}, {row}.key_folded, {row}.value_folded);
        INSERT INTO {WORDS_TABLE}({WORDS_TABLE}, rowid, scope, key, value)
            VALUES ('delete', {USER_ROWID.format(row=row)}, {SCOPE.format(row=row)}, {row}.key_folded, {row}.value_folded);"""


NUMBER_USER = f"INSERT OR IGNORE INTO {SCOPE_TABLE}(owner_id, uid) VALUES (new.owner_id, new.uid);"

SQLITE_FORWARD = [
    *(f"DROP TRIGGER IF EXISTS {trigger}" for trigger in TRIGGERS),
    f"DROP TABLE IF EXISTS {FTS_TABLE}",
    f"DROP TABLE IF EXISTS {WORDS_TABLE}",
    f"""
    CREATE TABLE {SCOPE_TABLE} (
        id INTEGER PRIMARY KEY, owner_id INTEGER NOT NULL, uid TEXT NOT NULL, UNIQUE (owner_id, uid)
    )
    """,
    f"CREATE VIRTUAL TABLE {FTS_TABLE} USING fts5(key_folded, value_folded, content='', tokenize='trigram')",
    f"""
    CREATE VIRTUAL TABLE {WORDS_TABLE} USING fts5(
        scope, key, value, content='', tokenize='unicode61 remove_diacritics 2'
    )
    """,
    f"""
    CREATE TRIGGER memories_memoryentry_fts_insert AFTER INSERT ON {ENTRY_TABLE} BEGIN
        {NUMBER_USER}{_index_rows("new")}
    END
    """,
    f"""
    CREATE TRIGGER memories_memoryentry_fts_delete AFTER DELETE ON {ENTRY_TABLE} BEGIN{_index_rows_delete("old")}
    END
    """,
    f"""
    CREATE TRIGGER memories_memoryentry_fts_update
    AFTER UPDATE OF key_folded, value_folded, owner_id, uid ON {ENTRY_TABLE} BEGIN{_index_rows_delete("old")}
        {NUMBER_USER}{_index_rows("new")}
    END
    """,
    # Entries written before this migration: numbered users, then their rows, then one segment per index.
    f"INSERT INTO {SCOPE_TABLE}(owner_id, uid) SELECT DISTINCT owner_id, uid FROM {ENTRY_TABLE} ORDER BY owner_id, uid",
    f"""
    INSERT INTO {FTS_TABLE}(rowid, key_folded, value_folded)
    SELECT {USER_ROWID.format(row=ENTRY_TABLE)}, key_folded, value_folded FROM {ENTRY_TABLE}
    """,
    f"""
    INSERT INTO {WORDS_TABLE}(rowid, scope, key, value)
    SELECT {USER_ROWID.format(row=ENTRY_TABLE)}, {SCOPE.format(row=ENTRY_TABLE)}, key_folded, value_folded
    FROM {ENTRY_TABLE}
    """,
    f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('optimize')",
    f"INSERT INTO {WORDS_TABLE}({WORDS_TABLE}) VALUES ('optimize')",
]

SQLITE_BACKWARD = [
    *(f"DROP TRIGGER IF EXISTS {trigger}" for trigger in TRIGGERS),
    f"DROP TABLE IF EXISTS {FTS_TABLE}",
    f"DROP TABLE IF EXISTS {WORDS_TABLE}",
    f"DROP TABLE IF EXISTS {SCOPE_TABLE}",
    # 0007's indexes, keyed by the entry's id, with their triggers.
    f"""
    CREATE VIRTUAL TABLE {FTS_TABLE} USING fts5(
        key_folded, value_folded, content='{ENTRY_TABLE}', content_rowid='id', tokenize='trigram'
    )
    """,
    f"""
    CREATE VIRTUAL TABLE {WORDS_TABLE} USING fts5(
        scope, key, value, content='', tokenize='unicode61 remove_diacritics 2'
    )
    """,
    f"""
    CREATE TRIGGER memories_memoryentry_fts_insert AFTER INSERT ON {ENTRY_TABLE} BEGIN
        INSERT INTO {FTS_TABLE}(rowid, key_folded, value_folded) VALUES (new.id, new.key_folded, new.value_folded);
        INSERT INTO {WORDS_TABLE}(rowid, scope, key, value)
            VALUES (new.id, {SCOPE.format(row="new")}, new.key_folded, new.value_folded);
    END
    """,
    f"""
    CREATE TRIGGER memories_memoryentry_fts_delete AFTER DELETE ON {ENTRY_TABLE} BEGIN
        INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, key_folded, value_folded)
            VALUES ('delete', old.id, old.key_folded, old.value_folded);
        INSERT INTO {WORDS_TABLE}({WORDS_TABLE}, rowid, scope, key, value)
            VALUES ('delete', old.id, {SCOPE.format(row="old")}, old.key_folded, old.value_folded);
    END
    """,
    f"""
    CREATE TRIGGER memories_memoryentry_fts_update
    AFTER UPDATE OF key_folded, value_folded, owner_id, uid ON {ENTRY_TABLE} BEGIN
        INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, key_folded, value_folded)
            VALUES ('delete', old.id, old.key_folded, old.value_folded);
        INSERT INTO {FTS_TABLE}(rowid, key_folded, value_folded) VALUES (new.id, new.key_folded, new.value_folded);
        INSERT INTO {WORDS_TABLE}({WORDS_TABLE}, rowid, scope, key, value)
            VALUES ('delete', old.id, {SCOPE.format(row="old")}, old.key_folded, old.value_folded);
        INSERT INTO {WORDS_TABLE}(rowid, scope, key, value)
            VALUES (new.id, {SCOPE.format(row="new")}, new.key_folded, new.value_folded);
    END
    """,
    f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('rebuild')",
    f"""
    INSERT INTO {WORDS_TABLE}(rowid, scope, key, value)
    SELECT id, {SCOPE.format(row=ENTRY_TABLE)}, key_folded, value_folded FROM {ENTRY_TABLE}
    """,
]


def _run(statements_by_vendor: dict[str, list[str]]) -> Callable[[StateApps, BaseDatabaseSchemaEditor], None]:
    def run(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
        for statement in statements_by_vendor.get(schema_editor.connection.vendor, []):
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("memories", "0011_entry_guard_flags_and_held_writes")]

    operations = [migrations.RunPython(_run({"sqlite": SQLITE_FORWARD}), _run({"sqlite": SQLITE_BACKWARD}))]
