"""The lexical channel: each chunk's terms, their count and analyzer version; lexical_stats."""

from django.db import migrations

from core.migration_ops import RunSQLFile


class Migration(migrations.Migration):

    dependencies = [
        ("knowledge", "0005_documents_and_chunks"),
    ]

    operations = [RunSQLFile(__file__)]
