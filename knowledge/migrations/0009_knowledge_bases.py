"""knowledge_bases and knowledge_base_sources, the outbound policy and the `default` base."""

from django.db import migrations

from core.migration_ops import RunSQLFile


class Migration(migrations.Migration):

    dependencies = [
        ("knowledge", "0008_document_formats"),
    ]

    operations = [RunSQLFile(__file__)]
