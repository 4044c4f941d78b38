"""Vaults from before knowledge bases become sources of `default`; rows written without a
base get their document's or source's."""

from django.db import migrations

from core.migration_ops import RunSQLFile


class Migration(migrations.Migration):

    dependencies = [
        ("knowledge", "0012_lexical_statistics_triggers"),
    ]

    operations = [RunSQLFile(__file__)]
