"""The SQLite triggers that keep the search indexes in step with the entry table, for migrations to restore.

SQLite cannot add a column with a default, or a constraint, in place: Django rebuilds the entry table,
and the rebuild drops its triggers (0007 made them). A migration that changes memories_memoryentry
ends with `restore_search_triggers()` (and starts with `restore_search_triggers_when_reversed()`, so
that undoing it restores them too). The index tables themselves survive: rows keep their ids.
"""

from importlib import import_module

from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

_SEARCH = import_module("memories.migrations.0007_search_folded_words")
TRIGGERS = [statement for statement in _SEARCH.SQLITE_FORWARD if statement.strip().startswith("CREATE TRIGGER")]
TRIGGER_NAMES = (
    "memories_memoryentry_fts_insert",
    "memories_memoryentry_fts_delete",
    "memories_memoryentry_fts_update",
)


def _restore(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    if schema_editor.connection.vendor != "sqlite":
        return
    for name in TRIGGER_NAMES:
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {name}")
    for statement in TRIGGERS:
        schema_editor.execute(statement)


def restore_search_triggers() -> migrations.RunPython:
    return migrations.RunPython(_restore, migrations.RunPython.noop)


def restore_search_triggers_when_reversed() -> migrations.RunPython:
    return migrations.RunPython(migrations.RunPython.noop, _restore)
