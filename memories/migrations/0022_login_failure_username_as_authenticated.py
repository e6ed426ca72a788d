"""A failed login's username is kept as authentication reads it (stripped, Unicode NFKC, case kept), no longer
case folded: only the field's help text changes, and no SQL runs."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0021_write_fewer_indexes"),
    ]

    operations = [
        migrations.AlterField(
            model_name="loginfailure",
            name="username",
            field=models.CharField(
                help_text="As authentication reads it: stripped, Unicode NFKC, case kept.", max_length=150
            ),
        ),
    ]
