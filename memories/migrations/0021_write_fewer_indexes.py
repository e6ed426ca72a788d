"""Fewer indexes for a write to keep: a new entry entered 14 on PostgreSQL (12 on SQLite), its history event 6,
its vector mark 4, and five of them answered nothing the others do not.

- owner_id of the entries, the history and the vector marks: the foreign keys' own indexes. Every index of
  those tables that a read uses starts with owner_id already ((owner, uid, key), (owner, kind), (owner, uid,
  key, -id), (owner, at), (owner, uid, model, embedded_at), ...), and so serves a look-up by owner alone
  (an account's removal).
- The history's held_write_id: all but a few events (the decisions on held writes) have none; the index now
  holds those few only, which a look-up of a held write's events (held_write_id = ...) still reads.
- PostgreSQL: honcho_session_id's second index (varchar_pattern_ops, for LIKE 'prefix%'), which Django adds
  beside the unique one and which no query of the hub uses.

The indexes are dropped by name (the names Django gave them), not by altering the fields: on SQLite, altering
a field rebuilds its table, and the entry table's search triggers would go with it.
"""

from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

# name: (table, column)
OWNER_INDEXES = {
    "memories_memoryentry_owner_id_de51771e": ("memories_memoryentry", "owner_id"),
    "memories_memoryevent_owner_id_25e00ad8": ("memories_memoryevent", "owner_id"),
    "memories_entryembedding_owner_id_dcb8abf9": ("memories_entryembedding", "owner_id"),
    "memories_memoryevent_held_write_id_eff72fd0": ("memories_memoryevent", "held_write_id"),
}
LIKE_INDEX = "memories_memoryentry_honcho_session_id_a343e036_like"


def _like_index_drop(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {LIKE_INDEX}")


def _like_index_create(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS {LIKE_INDEX} ON memories_memoryentry (honcho_session_id varchar_pattern_ops)"
        )


class Migration(migrations.Migration):
    dependencies = [("memories", "0020_search_indexes_scoped_to_user")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="memoryentry",
                    name="owner",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=models.deletion.CASCADE,
                        related_name="memory_entries",
                        to="auth.user",
                    ),
                ),
                migrations.AlterField(
                    model_name="memoryevent",
                    name="owner",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=models.deletion.CASCADE,
                        related_name="memory_events",
                        to="auth.user",
                    ),
                ),
                migrations.AlterField(
                    model_name="entryembedding",
                    name="owner",
                    field=models.ForeignKey(
                        db_index=False, on_delete=models.deletion.CASCADE, related_name="+", to="auth.user"
                    ),
                ),
                migrations.AlterField(
                    model_name="memoryevent",
                    name="held_write",
                    field=models.ForeignKey(
                        blank=True,
                        db_index=False,
                        help_text="For a decision on a held write (its approval or rejection): that held write.",
                        null=True,
                        on_delete=models.deletion.SET_NULL,
                        related_name="events",
                        to="memories.heldwrite",
                    ),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    sql=f"DROP INDEX IF EXISTS {name}",
                    reverse_sql=f"CREATE INDEX IF NOT EXISTS {name} ON {table} ({column})",
                )
                for name, (table, column) in OWNER_INDEXES.items()
            ],
        ),
        migrations.AddIndex(
            model_name="memoryevent",
            index=models.Index(
                condition=models.Q(held_write__isnull=False), fields=["held_write"], name="memory_event_held_write"
            ),
        ),
        migrations.RunPython(_like_index_drop, _like_index_create),
    ]
