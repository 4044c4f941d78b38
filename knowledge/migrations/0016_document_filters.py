"""documents.tags and the indexes of a search's metadata filters."""

from django.db import migrations

from core.migration_ops import RunSQLFile


class Migration(migrations.Migration):

    dependencies = [
        ("knowledge", "0015_vector_index_tuning"),
    ]

    operations = [RunSQLFile(__file__)]
