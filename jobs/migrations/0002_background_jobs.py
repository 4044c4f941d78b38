"""background_jobs, the table of jobs.models.BackgroundJob."""

from django.db import migrations

from core.migration_ops import RunSQLFile


class Migration(migrations.Migration):

    dependencies = [
        ("jobs", "0001_initial"),
    ]

    operations = [RunSQLFile(__file__)]
