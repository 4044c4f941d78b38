"""QuestionSet and EvalRun move to the evaluation app; their tables stay (state only)."""

from django.db import migrations

from core.migration_ops import content_types_moved


class Migration(migrations.Migration):

    dependencies = [
        ("workbench", "0001_initial"),
        ("evaluation", "0001_initial"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.DeleteModel(name="EvalRun"),
            migrations.DeleteModel(name="QuestionSet"),
        ]),
        content_types_moved(models=("questionset", "evalrun"), old_app="workbench",
                            new_app="evaluation"),
    ]
