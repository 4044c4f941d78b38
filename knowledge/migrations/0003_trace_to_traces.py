"""Trace moves to the traces app. The model is unmanaged and its table stays: state only."""

from django.db import migrations

from core.migration_ops import content_types_moved


class Migration(migrations.Migration):

    dependencies = [
        ("knowledge", "0002_background_job_to_jobs"),
        ("traces", "0001_initial"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.DeleteModel(name="Trace"),
        content_types_moved(models=("trace",), old_app="knowledge", new_app="traces"),
    ]
