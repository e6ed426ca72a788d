"""A history event keeps the entry's creation time as it stood before the change (created_before), so a restore
brings the entry back with the creation time it had when it was deleted. History written before has none: a
restore of it falls back to the entry's creation event. A nullable column: added in place, no table rebuilt."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0022_login_failure_username_as_authenticated"),
    ]

    operations = [
        migrations.AddField(
            model_name="memoryevent",
            name="created_before",
            field=models.DateTimeField(
                blank=True,
                help_text="The entry's creation time before the change, which a restore gives back (none for a "
                "create; none in history written before it was recorded).",
                null=True,
            ),
        ),
    ]
