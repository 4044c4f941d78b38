"""vector_index_tuning: the HNSW recall measured."""

from django.db import migrations

from core.migration_ops import RunSQLFile


class Migration(migrations.Migration):

    dependencies = [
        ("knowledge", "0014_document_versions"),
    ]

    operations = [RunSQLFile(__file__)]
