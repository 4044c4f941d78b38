"""documents, chunks, embeddings and ingest_runs, with pgvector."""

from django.db import migrations

from core.migration_ops import RunSQLFile


class Migration(migrations.Migration):

    dependencies = [
        ("knowledge", "0004_access_models_to_access"),
    ]

    operations = [RunSQLFile(__file__)]
