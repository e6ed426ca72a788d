"""The index of one user's entries newest first also holds expires and guard_flags, so the context block's count
of what a read sees (not expired, not flagged unless the policy lets flagged entries in) and its latest update
are read from the index alone instead of from each of the user's rows. It replaces the (owner, uid, -updated)
index, whose reads it answers as well (made first, so no read goes without one)."""

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0016_event_held_write_and_reject"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddIndex(
            model_name="memoryentry",
            index=models.Index(
                fields=["owner", "uid", "-updated", "expires", "guard_flags"], name="memory_entry_user_updated_live"
            ),
        ),
        migrations.RemoveIndex(model_name="memoryentry", name="memory_entry_owner_uid_upd"),
    ]
