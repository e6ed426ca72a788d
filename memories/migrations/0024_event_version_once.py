"""No two creates or updates of a key share a version (MemoryEvent.Meta: memory_event_version_once).

The services always meant it, but on PostgreSQL one race could break it: a put creating a key while a batch
created and deleted that key, neither committed. The put waited for the batch's entry, found it gone, and
inserted its own at the version it had worked out before the wait, the one the batch's create had used.
With this index the put's insert fails instead, and the put is written again after the batch.

History written before may hold such a repeat already. It is left as it was (history is not rewritten): the
index then covers the events after the last repeated one only, and every event written from here on.
"""

from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

NAME = "memory_event_version_once"
TABLE = "memories_memoryevent"


def _index_create(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    quote = schema_editor.quote_name
    columns = ", ".join(quote(name) for name in ("owner_id", "uid", "key", "version"))
    changes = f"{quote('action')} IN ('create', 'update')"
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            f"SELECT MAX(last_id) FROM (SELECT MAX({quote('id')}) AS last_id FROM {quote(TABLE)} WHERE {changes} "
            f"GROUP BY {columns} HAVING COUNT(*) > 1) AS repeats"
        )
        last_repeat = cursor.fetchone()[0]
    condition = changes if last_repeat is None else f"{changes} AND {quote('id')} > {int(last_repeat)}"
    schema_editor.execute(f"CREATE UNIQUE INDEX {quote(NAME)} ON {quote(TABLE)} ({columns}) WHERE {condition}")


def _index_drop(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    schema_editor.execute(f"DROP INDEX IF EXISTS {schema_editor.quote_name(NAME)}")


class Migration(migrations.Migration):
    dependencies = [("memories", "0023_event_created_before")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddConstraint(
                    model_name="memoryevent",
                    constraint=models.UniqueConstraint(
                        condition=models.Q(("action__in", ["create", "update"])),
                        fields=("owner", "uid", "key", "version"),
                        name=NAME,
                    ),
                ),
            ],
            database_operations=[migrations.RunPython(_index_create, _index_drop, elidable=False)],
        ),
    ]
