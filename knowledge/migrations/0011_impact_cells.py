"""Impact cells on chunks and the per-base BM25 statistics tables."""

from django.db import migrations

from core.migration_ops import RunSQLFile


class Migration(migrations.Migration):

    dependencies = [
        ("knowledge", "0010_documents_in_bases"),
    ]

    operations = [RunSQLFile(__file__)]
