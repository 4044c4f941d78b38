"""The knowledge base of every document and chunk; an upload's status and names."""

from django.db import migrations

from core.migration_ops import RunSQLFile


class Migration(migrations.Migration):

    dependencies = [
        ("knowledge", "0009_knowledge_bases"),
    ]

    operations = [RunSQLFile(__file__)]
