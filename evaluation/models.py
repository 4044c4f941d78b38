"""Evaluation's own records: question sets (the YAML format of `rag eval`) and their runs.

Both tables were made by the workbench app, which held these models first; they keep their
names (migrations: evaluation 0001 and workbench 0002 move the models, not the tables).
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models

from evaluation.progress import RunProgress
from knowledge.models import KnowledgeBase


class QuestionSet(models.Model):
    """Evaluation questions (the YAML format of `rag eval`) for one knowledge base."""

    knowledge_base = models.ForeignKey(KnowledgeBase, on_delete=models.DO_NOTHING,
                                       db_constraint=False, related_name="question_sets")
    name = models.CharField(max_length=200)
    source_name = models.CharField(max_length=255, blank=True, default="")
    questions = models.JSONField(default=list)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL,
                                   null=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "workbench_questionset"  # made by the workbench app, where the model began
        constraints = [models.UniqueConstraint(fields=["knowledge_base", "name"],
                                               name="one_question_set_name_per_base")]
        ordering = ["knowledge_base_id", "name"]

    def __str__(self) -> str:
        return self.name


class QuestionSetVersion(models.Model):
    """One version of a set's questions. A version is frozen once a run uses it: an edit then
    makes the next version, and every run keeps pointing at the version it evaluated."""

    question_set = models.ForeignKey(QuestionSet, on_delete=models.CASCADE,
                                     related_name="versions")
    number = models.PositiveIntegerField()
    questions = models.JSONField(default=list)
    content_hash = models.CharField(max_length=64)  # sha256 of the questions' canonical JSON
    frozen_at = models.DateTimeField(null=True)  # when a run first used it
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL,
                                   null=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["question_set", "number"],
                                               name="one_number_per_question_set_version")]
        ordering = ["question_set_id", "number"]

    def __str__(self) -> str:
        return f"{self.question_set} v{self.number}"


class EvalRun(models.Model):
    """One evaluation of a question set, run by the job worker; `summary` holds the metrics."""

    QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
    STATUSES = [(QUEUED, QUEUED), (RUNNING, RUNNING), (DONE, DONE), (FAILED, FAILED)]

    question_set = models.ForeignKey(QuestionSet, on_delete=models.CASCADE, related_name="runs")
    knowledge_base = models.ForeignKey(KnowledgeBase, on_delete=models.DO_NOTHING,
                                       db_constraint=False, related_name="+")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL,
                                   null=True, related_name="+")
    job_id = models.BigIntegerField(null=True)
    status = models.CharField(max_length=16, choices=STATUSES, default=QUEUED)
    parameters = models.JSONField(default=dict)
    summary = models.JSONField(default=dict)
    report = models.JSONField(default=dict)
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True)
    # What makes a run reproducible (evaluation/records.py); null or empty on runs made before.
    set_version = models.ForeignKey(QuestionSetVersion, on_delete=models.CASCADE, null=True,
                                    related_name="runs")
    knowledge_base_ids = ArrayField(models.BigIntegerField(), default=list)  # all it evaluated
    config_hash = models.CharField(max_length=64, blank=True, default="")
    prompt_version = models.CharField(max_length=32, blank=True, default="")
    code_version = models.CharField(max_length=80, blank=True, default="")
    corpus_digest = models.CharField(max_length=64, blank=True, default="")
    leakage = models.JSONField(default=list)  # question text found verbatim in the bases
    cost = models.JSONField(null=True)  # {amount, currency} of the answers; null: unknown
    # Not a column: set by `run_settle` (evaluation/runs.py) on every run it reads.
    progress: RunProgress | None

    class Meta:
        db_table = "workbench_evalrun"  # made by the workbench app, where the model began
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"run {self.pk} of {self.question_set}"
