"""traces, the table of traces.models.Trace."""

from django.db import migrations

from core.migration_ops import RunSQLFile


class Migration(migrations.Migration):

    dependencies = [
        ("traces", "0001_initial"),
    ]

    operations = [RunSQLFile(__file__)]
