"""The search index's generations and change log, and the triggers on chunks and embeddings
that write them."""

from django.db import migrations

from core.migration_ops import RunSQLFile


class Migration(migrations.Migration):

    dependencies = [
        ("search_index", "0001_initial"),
        # chunks (with their terms and knowledge base) and embeddings, which the triggers watch.
        ("knowledge", "0010_documents_in_bases"),
    ]

    operations = [RunSQLFile(__file__)]
