"""QuestionSet and EvalRun move here from the workbench app; their tables (made by workbench
0001) stay where they are, so this is state only. Workbench 0002 forgets them first: `rag db init`
migrates this app before the workbench, and Django makes content types for every model of the
state it ends with, so a workbench model left in it would get a new, stale one."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from core.migration_ops import content_types_moved


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ("knowledge", "0001_initial"),
        ("workbench", "0002_evaluation_models_to_evaluation"),
        ("contenttypes", "0002_remove_content_type_name"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.CreateModel(
                name="QuestionSet",
                fields=[
                    ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                    ("name", models.CharField(max_length=200)),
                    ("source_name", models.CharField(blank=True, default="", max_length=255)),
                    ("questions", models.JSONField(default=list)),
                    ("created_at", models.DateTimeField(auto_now_add=True)),
                    ("created_by", models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name="+", to=settings.AUTH_USER_MODEL)),
                    ("knowledge_base", models.ForeignKey(db_constraint=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name="question_sets", to="knowledge.knowledgebase")),
                ],
                options={
                    "db_table": "workbench_questionset",
                    "ordering": ["knowledge_base_id", "name"],
                    "constraints": [models.UniqueConstraint(fields=("knowledge_base", "name"), name="one_question_set_name_per_base")],
                },
            ),
            migrations.CreateModel(
                name="EvalRun",
                fields=[
                    ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                    ("job_id", models.BigIntegerField(null=True)),
                    ("status", models.CharField(choices=[("queued", "queued"), ("running", "running"), ("done", "done"), ("failed", "failed")], default="queued", max_length=16)),
                    ("parameters", models.JSONField(default=dict)),
                    ("summary", models.JSONField(default=dict)),
                    ("report", models.JSONField(default=dict)),
                    ("error", models.TextField(blank=True, default="")),
                    ("created_at", models.DateTimeField(auto_now_add=True)),
                    ("finished_at", models.DateTimeField(null=True)),
                    ("created_by", models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name="+", to=settings.AUTH_USER_MODEL)),
                    ("knowledge_base", models.ForeignKey(db_constraint=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name="+", to="knowledge.knowledgebase")),
                    ("question_set", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="runs", to="evaluation.questionset")),
                ],
                options={
                    "db_table": "workbench_evalrun",
                    "ordering": ["-created_at"],
                },
            ),
        ]),
        content_types_moved(models=("questionset", "evalrun"), old_app="workbench",
                            new_app="evaluation"),
    ]
