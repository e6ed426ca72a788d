"""The full-text search index over entries' key and value.

SQLite: an FTS5 table with the trigram tokenizer (case-insensitive substrings of 3 or more
characters) whose content is the entry table itself, kept in step by triggers, so every write that
touches an entry updates the index in the same transaction, whichever service made it.

PostgreSQL: an expression GIN index over the words of key (weight A) and value (weight D) for
ranked word search, and pg_trgm GIN indexes over key and value so the substring (ILIKE) half of a query is
indexed too. Both are computed from the row, so no trigger is needed.
"""

from collections.abc import Callable

from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

FTS_TABLE = "memories_memoryentry_fts"

SQLITE_FORWARD = [
    f"""
    CREATE VIRTUAL TABLE {FTS_TABLE} USING fts5(
        key, value,
        content='memories_memoryentry', content_rowid='id',
        tokenize='trigram'
    )
    """,
    f"""
    CREATE TRIGGER memories_memoryentry_fts_insert AFTER INSERT ON memories_memoryentry BEGIN
        INSERT INTO {FTS_TABLE}(rowid, key, value) VALUES (new.id, new.key, new.value);
    END
    """,
    f"""
    CREATE TRIGGER memories_memoryentry_fts_delete AFTER DELETE ON memories_memoryentry BEGIN
        INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, key, value) VALUES ('delete', old.id, old.key, old.value);
    END
    """,
    f"""
    CREATE TRIGGER memories_memoryentry_fts_update AFTER UPDATE OF key, value ON memories_memoryentry BEGIN
        INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, key, value) VALUES ('delete', old.id, old.key, old.value);
        INSERT INTO {FTS_TABLE}(rowid, key, value) VALUES (new.id, new.key, new.value);
    END
    """,
    # Entries written before this migration.
    f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('rebuild')",
]

SQLITE_BACKWARD = [
    "DROP TRIGGER IF EXISTS memories_memoryentry_fts_update",
    "DROP TRIGGER IF EXISTS memories_memoryentry_fts_delete",
    "DROP TRIGGER IF EXISTS memories_memoryentry_fts_insert",
    f"DROP TABLE IF EXISTS {FTS_TABLE}",
]

POSTGRES_FORWARD = [
    # pg_trgm is a trusted extension (PostgreSQL 13+): the database's owner may create it.
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    """
    CREATE INDEX memory_entry_search_words ON memories_memoryentry
    USING GIN ((setweight(to_tsvector('simple'::regconfig, key), 'A') || setweight(to_tsvector('simple'::regconfig, value), 'D')))
    """,
    "CREATE INDEX memory_entry_key_trgm ON memories_memoryentry USING GIN (key gin_trgm_ops)",
    "CREATE INDEX memory_entry_value_trgm ON memories_memoryentry USING GIN (value gin_trgm_ops)",
]

POSTGRES_BACKWARD = [
    "DROP INDEX IF EXISTS memory_entry_value_trgm",
    "DROP INDEX IF EXISTS memory_entry_key_trgm",
    "DROP INDEX IF EXISTS memory_entry_search_words",
]


def _run(statements_by_vendor: dict[str, list[str]]) -> Callable[[StateApps, BaseDatabaseSchemaEditor], None]:
    def run(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
        for statement in statements_by_vendor.get(schema_editor.connection.vendor, []):
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    # After every migration that rebuilds the entry table: on SQLite a rebuild (as Django does for
    # some AddField/AlterField) drops the table's triggers, and with them this index's upkeep. A later
    # migration that rebuilds memories_memoryentry must create the triggers again.
    dependencies = [("memories", "0002_sync_outbox")]

    operations = [
        migrations.RunPython(
            _run({"sqlite": SQLITE_FORWARD, "postgresql": POSTGRES_FORWARD}),
            _run({"sqlite": SQLITE_BACKWARD, "postgresql": POSTGRES_BACKWARD}),
        ),
    ]
