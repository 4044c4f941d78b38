"""audit_logs, its append-only trigger and audit_logs_prune()."""

from django.db import migrations

from core.migration_ops import RunSQLFile


class Migration(migrations.Migration):

    dependencies = [
        ("audit", "0001_initial"),
    ]

    operations = [RunSQLFile(__file__)]
