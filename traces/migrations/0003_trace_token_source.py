"""traces.token_source: where token counts came from."""

from django.db import migrations

from core.migration_ops import RunSQLFile


class Migration(migrations.Migration):

    dependencies = [
        ("traces", "0002_traces"),
    ]

    operations = [RunSQLFile(__file__)]
