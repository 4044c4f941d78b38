"""job_workers: the job workers that are alive."""

from django.db import migrations

from core.migration_ops import RunSQLFile


class Migration(migrations.Migration):

    dependencies = [
        ("jobs", "0002_background_jobs"),
    ]

    operations = [RunSQLFile(__file__)]
