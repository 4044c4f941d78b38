"""BackgroundJob moves to the jobs app. The model is unmanaged and its table stays: state only."""

from django.db import migrations

from core.migration_ops import content_types_moved


class Migration(migrations.Migration):

    dependencies = [
        ("knowledge", "0001_initial"),
        ("jobs", "0001_initial"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.DeleteModel(name="BackgroundJob"),
        content_types_moved(models=("backgroundjob",), old_app="knowledge", new_app="jobs"),
    ]
