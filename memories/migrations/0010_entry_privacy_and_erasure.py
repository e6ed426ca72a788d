"""Entries get a privacy class (local or shared, shared for every entry so far); the history gets the
privacy before and after each change, and erasures (one event per erased uid, with its entry count).

Rebuilding the entry table on SQLite drops the search triggers: they are made again at the end.
"""

from django.conf import settings
from django.db import migrations, models

from memories.migrations._search_triggers import restore_search_triggers, restore_search_triggers_when_reversed


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0009_account_policy"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        restore_search_triggers_when_reversed(),
        migrations.RemoveConstraint(
            model_name="memoryevent",
            name="memory_event_action_valid",
        ),
        migrations.AddField(
            model_name="memoryentry",
            name="privacy",
            field=models.CharField(choices=[("local", "local"), ("shared", "shared")], default="shared", max_length=8),
        ),
        migrations.AddField(
            model_name="memoryevent",
            name="entries_erased",
            field=models.PositiveIntegerField(blank=True, help_text="For an erasure: how many entries.", null=True),
        ),
        migrations.AddField(
            model_name="memoryevent",
            name="privacy_after",
            field=models.CharField(
                blank=True, choices=[("local", "local"), ("shared", "shared")], max_length=8, null=True
            ),
        ),
        migrations.AddField(
            model_name="memoryevent",
            name="privacy_before",
            field=models.CharField(
                blank=True, choices=[("local", "local"), ("shared", "shared")], max_length=8, null=True
            ),
        ),
        migrations.AlterField(
            model_name="memoryevent",
            name="action",
            field=models.CharField(
                choices=[("create", "created"), ("update", "updated"), ("delete", "deleted"), ("erase", "erased")],
                max_length=8,
            ),
        ),
        migrations.AddConstraint(
            model_name="memoryentry",
            constraint=models.CheckConstraint(
                condition=models.Q(("privacy__in", ["local", "shared"])), name="memory_entry_privacy_valid"
            ),
        ),
        migrations.AddConstraint(
            model_name="memoryevent",
            constraint=models.CheckConstraint(
                condition=models.Q(("action__in", ["create", "update", "delete", "erase"])),
                name="memory_event_action_valid",
            ),
        ),
        restore_search_triggers(),
    ]
