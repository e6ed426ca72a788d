"""The SQLite triggers that keep the search indexes in step with the entry table, for migrations to restore.

SQLite cannot add a column with a default, or a constraint, in place: Django rebuilds the entry table,
and the rebuild drops its triggers (0007 made them, 0012 remade them for the indexes keyed by user). A migration that changes memories_memoryentry
ends with `restore_search_triggers()` (and starts with `restore_search_triggers_when_reversed()`, so
that undoing it restores them too). The index tables themselves survive: rows keep their ids.
"""

from importlib import import_module

from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

_WORDS = import_module("memories.migrations.0007_search_folded_words")
_PER_USER = import_module("memories.migrations.0012_search_indexes_per_user")
TRIGGER_NAMES = (
    "memories_memoryentry_fts_insert",
    "memories_memoryentry_fts_delete",
    "memories_memoryentry_fts_update",
)


def _triggers(statements: list[str]) -> list[str]:
    return [statement for statement in statements if statement.strip().startswith("CREATE TRIGGER")]


def _restore(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    connection = schema_editor.connection
    if connection.vendor != "sqlite":
        return
    # The triggers as the indexes stand: 0012's once it has keyed them by user (its table of user
    # numbers exists), else 0007's.
    with connection.cursor() as cursor:
        per_user = _PER_USER.SCOPE_TABLE in connection.introspection.table_names(cursor)
    for name in TRIGGER_NAMES:
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {name}")
    for statement in _triggers(_PER_USER.SQLITE_FORWARD if per_user else _WORDS.SQLITE_FORWARD):
        schema_editor.execute(statement)


def restore_search_triggers() -> migrations.RunPython:
    return migrations.RunPython(_restore, migrations.RunPython.noop)


def restore_search_triggers_when_reversed() -> migrations.RunPython:
    return migrations.RunPython(migrations.RunPython.noop, _restore)
