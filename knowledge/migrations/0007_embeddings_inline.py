"""Vectors stored inline (PLAIN), not out of line."""

from django.db import migrations

from core.migration_ops import RunSQLFile


class Migration(migrations.Migration):

    dependencies = [
        ("knowledge", "0006_lexical_channel"),
    ]

    operations = [RunSQLFile(__file__)]
