"""restore_runs: each `rag restore` into this database."""

from django.db import migrations

from core.migration_ops import RunSQLFile


class Migration(migrations.Migration):

    dependencies = [
        ("knowledge", "0016_document_filters"),
    ]

    operations = [RunSQLFile(__file__)]
