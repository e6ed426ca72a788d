"""PostgreSQL: a GIN index over entries' meta (jsonb_path_ops), which answers the meta filters' containment
(`meta @> '{"FIELD": value}'`, memories.filters). SQLite has no such index: its filters read json_extract
over the user's rows, which the (owner, uid) index narrows to first."""

from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

INDEX = "memory_entry_meta_containment"
FORWARD = f"CREATE INDEX IF NOT EXISTS {INDEX} ON memories_memoryentry USING gin (meta jsonb_path_ops)"
BACKWARD = f"DROP INDEX IF EXISTS {INDEX}"


def _forward(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(FORWARD)


def _backward(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(BACKWARD)


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0013_entry_expiry"),
    ]

    operations = [migrations.RunPython(_forward, _backward)]
