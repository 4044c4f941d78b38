"""QuestionSet and EvalRun move to the evaluation app, whose 0001 takes them over (with their
content types); their tables stay (state only)."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("workbench", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.DeleteModel(name="EvalRun"),
            migrations.DeleteModel(name="QuestionSet"),
        ]),
    ]
