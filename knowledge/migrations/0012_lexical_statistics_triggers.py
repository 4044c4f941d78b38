"""The triggers on chunks that keep the lexical statistics and impact cells current."""

from django.db import migrations

from core.migration_ops import RunSQLFile


class Migration(migrations.Migration):

    dependencies = [
        ("knowledge", "0011_impact_cells"),
    ]

    operations = [RunSQLFile(__file__)]
