"""PostgreSQL: each entry keeps its words (a stored tsvector), and the search's GIN indexes lead with the
entry's owner and user, so a search reads one user's entries from them alone.

- The words: the column folded_words, generated from the folded key (weight A) and value (weight D) as
  migration 0007's index expression was. A search ranked up to 200 candidates with ts_rank, and made each
  one's tsvector anew from its text for that: most of a search's time at 10,000 entries per user. It is
  made once, when the entry is written, as its index entry already was.
- The indexes: each GIN index (the words, the trigrams of the folded key and value) answered for the whole
  hub, and the planner intersected it with the user's (owner, uid, key) index: at 10,000 entries per user,
  reading that index's 10,000 rows cost about 0.45 ms per word of a query, and a word's substrings were
  rechecked in every row of the hub holding them. btree_gin (a trusted extension of PostgreSQL's contrib, as
  pg_trgm is) puts owner_id and uid into the same GIN index, whose scan then skips straight to the user's
  rows that hold the word. The indexes keep their names, and a search by the words alone (how many entries
  of the hub hold a word, for its weight) still reads them.

The column is the database's alone: the model does not name it, and nothing writes it. Adding it rewrites the
entry table, and reads and writes of entries wait for the migration: 9 s for 160,000 entries on the 2-core
machine the benchmarks ran on. SQLite is untouched: its indexes are keyed by user already (migration 0012).
"""

from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

ENTRY_TABLE = "memories_memoryentry"
WORDS_COLUMN = "folded_words"
# Migration 0007's index expression, which the column now holds.
WORDS = (
    f"(setweight(to_tsvector('simple'::regconfig, {ENTRY_TABLE}.key_folded), 'A') || "
    f"setweight(to_tsvector('simple'::regconfig, {ENTRY_TABLE}.value_folded), 'D'))"
)
# As migration 0019.
PENDING_LIST_KB = 256
# name: (the indexed columns before, after)
INDEXES = {
    "memory_entry_folded_words": (WORDS, f"owner_id, uid, {WORDS_COLUMN}"),
    "memory_entry_key_folded_trgm": ("key_folded gin_trgm_ops", "owner_id, uid, key_folded gin_trgm_ops"),
    "memory_entry_value_folded_trgm": ("value_folded gin_trgm_ops", "owner_id, uid, value_folded gin_trgm_ops"),
}


def _rebuild(schema_editor: BaseDatabaseSchemaEditor, scoped: bool) -> None:
    for name, (whole_hub, per_user) in INDEXES.items():
        # Made under a new name first, so no search goes without an index while it is built.
        schema_editor.execute(
            f"CREATE INDEX {name}_new ON {ENTRY_TABLE} USING GIN ({per_user if scoped else whole_hub}) "
            f"WITH (gin_pending_list_limit = {PENDING_LIST_KB})"
        )
        schema_editor.execute(f"DROP INDEX {name}")
        schema_editor.execute(f"ALTER INDEX {name}_new RENAME TO {name}")


def _scope(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("CREATE EXTENSION IF NOT EXISTS btree_gin")
    schema_editor.execute(
        f"ALTER TABLE {ENTRY_TABLE} ADD COLUMN {WORDS_COLUMN} tsvector GENERATED ALWAYS AS {WORDS} STORED"
    )
    _rebuild(schema_editor, scoped=True)
    # The words' statistics (memories.search.lexical reads them for each word's weight) are the column's now.
    schema_editor.execute(f"ANALYZE {ENTRY_TABLE}")


def _unscope(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    _rebuild(schema_editor, scoped=False)
    schema_editor.execute(f"ALTER TABLE {ENTRY_TABLE} DROP COLUMN {WORDS_COLUMN}")
    schema_editor.execute(f"ANALYZE {ENTRY_TABLE}")


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0019_search_indexes_small_pending_lists"),
    ]

    operations = [migrations.RunPython(_scope, _unscope)]
