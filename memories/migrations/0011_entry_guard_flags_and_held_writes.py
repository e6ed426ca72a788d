"""The write guard: the rules an entry broke (MemoryEntry.guard_flags), and the review queue (HeldWrite).

guard_flags is added with ALTER TABLE ... ADD COLUMN on both databases: Django's AddField rebuilds
the entry table on SQLite, which would drop the search index's triggers (memories 0007).
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0010_entry_privacy_and_erasure"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddField(
                    model_name="memoryentry",
                    name="guard_flags",
                    field=models.CharField(blank=True, default="", editable=False, max_length=500),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    "ALTER TABLE memories_memoryentry ADD COLUMN guard_flags varchar(500) NOT NULL DEFAULT ''",
                    "ALTER TABLE memories_memoryentry DROP COLUMN guard_flags",
                ),
            ],
        ),
        migrations.CreateModel(
            name="HeldWrite",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("uid", models.CharField(max_length=255)),
                ("key", models.CharField(max_length=255)),
                ("value", models.TextField(help_text="The value the write asked to store.")),
                (
                    "kind",
                    models.CharField(
                        blank=True, help_text="Empty: the write kept the entry's kind.", max_length=32, null=True
                    ),
                ),
                ("meta", models.JSONField(blank=True, help_text="Empty: the write kept the entry's meta.", null=True)),
                (
                    "privacy",
                    models.CharField(
                        blank=True,
                        choices=[("local", "local"), ("shared", "shared")],
                        help_text="Empty: the write named none.",
                        max_length=8,
                        null=True,
                    ),
                ),
                ("guard_flags", models.CharField(help_text="The rules the write broke.", max_length=500)),
                ("requested_at", models.DateTimeField()),
                (
                    "status",
                    models.CharField(
                        choices=[("pending", "pending review"), ("approved", "approved"), ("rejected", "rejected")],
                        default="pending",
                        max_length=8,
                    ),
                ),
                ("decided_at", models.DateTimeField(blank=True, null=True)),
                (
                    "entry_version",
                    models.PositiveIntegerField(
                        blank=True, help_text="The entry's version once the approved write was applied.", null=True
                    ),
                ),
                (
                    "decided_by",
                    models.ForeignKey(
                        blank=True,
                        help_text="The staff member who approved or rejected it.",
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "owner",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="held_writes",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "requested_by",
                    models.ForeignKey(
                        blank=True,
                        help_text="The account that made the write.",
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "verbose_name": "held write",
                "indexes": [
                    models.Index(fields=["status", "requested_at"], name="held_write_queue"),
                    models.Index(fields=["owner", "uid", "key"], name="held_write_owner_entry"),
                ],
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(("status__in", ["pending", "approved", "rejected"])),
                        name="held_write_status_valid",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            models.Q(("decided_at", None), ("status", "pending")),
                            models.Q(
                                models.Q(("status", "pending"), _negated=True),
                                models.Q(("decided_at", None), _negated=True),
                            ),
                            _connector="OR",
                        ),
                        name="held_write_decided_when_not_pending",
                    ),
                ],
            },
        ),
    ]
