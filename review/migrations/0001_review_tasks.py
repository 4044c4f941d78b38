"""review_tasks: the review queue."""

from django.db import migrations

from core.migration_ops import RunSQLFile


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ("knowledge", "0017_restore_runs"),
    ]

    operations = [RunSQLFile(__file__)]
