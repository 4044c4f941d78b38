"""document_versions and documents.active_version_id."""

from django.db import migrations

from core.migration_ops import RunSQLFile


class Migration(migrations.Migration):

    dependencies = [
        ("knowledge", "0013_documents_base_fill"),
    ]

    operations = [RunSQLFile(__file__)]
