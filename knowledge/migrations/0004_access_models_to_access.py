"""Grant and ApiToken move to the access app; their tables stay: state only."""

from django.db import migrations

from core.migration_ops import content_types_moved


class Migration(migrations.Migration):

    dependencies = [
        ("knowledge", "0003_trace_to_traces"),
        ("access", "0001_initial"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.RemoveField(model_name="grant", name="knowledge_base"),
            migrations.RemoveField(model_name="grant", name="user"),
            migrations.DeleteModel(name="ApiToken"),
            migrations.DeleteModel(name="Grant"),
        ]),
        content_types_moved(models=("grant", "apitoken"), old_app="knowledge", new_app="access"),
    ]
