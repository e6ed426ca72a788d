"""Search on folded text, by words as well as by substrings, and the index rebuilt for existing entries.

Each entry gets key_folded and value_folded (memories.folding.fold: no case, no accents), filled here
for the entries already written. Every index of the search reads those columns:

SQLite: memories_memoryentry_fts (FTS5, trigram tokenizer: substrings of 3 or more characters) is
rebuilt over them, and memories_memoryentry_words (FTS5, unicode61 tokenizer: whole words, for bm25
ranking and for words of 1 or 2 characters) is added. The words index is contentless and holds a
third column, scope: one token per account and user ('s' || owner_id || 'x' || hex(uid)), so a query
asks the index for one user's rows alone. Triggers keep both in step with the entry table in the
writer's transaction. The AddFields below rebuild the entry table on SQLite, which drops the
triggers of 0003; they are made again here.

PostgreSQL: a GIN index over the words of key_folded (weight A) and value_folded (weight D), and
pg_trgm GIN indexes over both for substrings; they replace 0003's indexes over the raw text.
"""

from collections.abc import Callable

from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

import memories.models
from memories.folding import fold

ENTRY_TABLE = "memories_memoryentry"
FTS_TABLE = "memories_memoryentry_fts"
WORDS_TABLE = "memories_memoryentry_words"
FOLD_BATCH = 2000
SCOPE = "'s' || {row}.owner_id || 'x' || hex({row}.uid)"

SQLITE_FORWARD = [
    "DROP TRIGGER IF EXISTS memories_memoryentry_fts_update",
    "DROP TRIGGER IF EXISTS memories_memoryentry_fts_delete",
    "DROP TRIGGER IF EXISTS memories_memoryentry_fts_insert",
    f"DROP TABLE IF EXISTS {FTS_TABLE}",
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
    # Entries written before this migration.
    f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('rebuild')",
    f"""
    INSERT INTO {WORDS_TABLE}(rowid, scope, key, value)
    SELECT id, {SCOPE.format(row=ENTRY_TABLE)}, key_folded, value_folded FROM {ENTRY_TABLE}
    """,
]

SQLITE_BACKWARD = [
    "DROP TRIGGER IF EXISTS memories_memoryentry_fts_update",
    "DROP TRIGGER IF EXISTS memories_memoryentry_fts_delete",
    "DROP TRIGGER IF EXISTS memories_memoryentry_fts_insert",
    f"DROP TABLE IF EXISTS {WORDS_TABLE}",
    f"DROP TABLE IF EXISTS {FTS_TABLE}",
    # 0003's index over the raw text, with its triggers.
    f"""
    CREATE VIRTUAL TABLE {FTS_TABLE} USING fts5(
        key, value, content='{ENTRY_TABLE}', content_rowid='id', tokenize='trigram'
    )
    """,
    f"""
    CREATE TRIGGER memories_memoryentry_fts_insert AFTER INSERT ON {ENTRY_TABLE} BEGIN
        INSERT INTO {FTS_TABLE}(rowid, key, value) VALUES (new.id, new.key, new.value);
    END
    """,
    f"""
    CREATE TRIGGER memories_memoryentry_fts_delete AFTER DELETE ON {ENTRY_TABLE} BEGIN
        INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, key, value) VALUES ('delete', old.id, old.key, old.value);
    END
    """,
    f"""
    CREATE TRIGGER memories_memoryentry_fts_update AFTER UPDATE OF key, value ON {ENTRY_TABLE} BEGIN
        INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, key, value) VALUES ('delete', old.id, old.key, old.value);
        INSERT INTO {FTS_TABLE}(rowid, key, value) VALUES (new.id, new.key, new.value);
    END
    """,
    f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('rebuild')",
]

POSTGRES_WORDS = (
    "(setweight(to_tsvector('simple'::regconfig, key_folded), 'A') || "
    "setweight(to_tsvector('simple'::regconfig, value_folded), 'D'))"
)
POSTGRES_FORWARD = [
    "DROP INDEX IF EXISTS memory_entry_value_trgm",
    "DROP INDEX IF EXISTS memory_entry_key_trgm",
    "DROP INDEX IF EXISTS memory_entry_search_words",
    f"CREATE INDEX memory_entry_folded_words ON {ENTRY_TABLE} USING GIN ({POSTGRES_WORDS})",
    f"CREATE INDEX memory_entry_key_folded_trgm ON {ENTRY_TABLE} USING GIN (key_folded gin_trgm_ops)",
    f"CREATE INDEX memory_entry_value_folded_trgm ON {ENTRY_TABLE} USING GIN (value_folded gin_trgm_ops)",
    f"ANALYZE {ENTRY_TABLE}",
]

POSTGRES_BACKWARD = [
    "DROP INDEX IF EXISTS memory_entry_value_folded_trgm",
    "DROP INDEX IF EXISTS memory_entry_key_folded_trgm",
    "DROP INDEX IF EXISTS memory_entry_folded_words",
    """
    CREATE INDEX memory_entry_search_words ON memories_memoryentry
    USING GIN ((setweight(to_tsvector('simple'::regconfig, key), 'A') || setweight(to_tsvector('simple'::regconfig, value), 'D')))
    """,
    "CREATE INDEX memory_entry_key_trgm ON memories_memoryentry USING GIN (key gin_trgm_ops)",
    "CREATE INDEX memory_entry_value_trgm ON memories_memoryentry USING GIN (value gin_trgm_ops)",
]


def fold_existing_entries(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    """Fill key_folded and value_folded of the entries written before this migration, in batches."""
    connection = schema_editor.connection
    last_id = 0
    with connection.cursor() as cursor:
        while True:
            cursor.execute(
                f"SELECT id, key, value FROM {ENTRY_TABLE} WHERE id > %s ORDER BY id LIMIT %s", [last_id, FOLD_BATCH]
            )
            rows = cursor.fetchall()
            if not rows:
                return
            cursor.executemany(
                f"UPDATE {ENTRY_TABLE} SET key_folded = %s, value_folded = %s WHERE id = %s",
                [(fold(key), fold(value), entry_id) for entry_id, key, value in rows],
            )
            last_id = rows[-1][0]


def _run(statements_by_vendor: dict[str, list[str]]) -> Callable[[StateApps, BaseDatabaseSchemaEditor], None]:
    def run(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
        for statement in statements_by_vendor.get(schema_editor.connection.vendor, []):
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("memories", "0006_worker_heartbeat")]

    operations = [
        migrations.AddField(
            model_name="memoryentry",
            name="key_folded",
            field=memories.models.FoldedCopyField(source="key"),
        ),
        migrations.AddField(
            model_name="memoryentry",
            name="value_folded",
            field=memories.models.FoldedCopyField(source="value"),
        ),
        # Before the triggers exist on SQLite, so filling the columns does not touch an index twice.
        migrations.RunPython(fold_existing_entries, migrations.RunPython.noop),
        migrations.RunPython(
            _run({"sqlite": SQLITE_FORWARD, "postgresql": POSTGRES_FORWARD}),
            _run({"sqlite": SQLITE_BACKWARD, "postgresql": POSTGRES_BACKWARD}),
        ),
    ]
