"""What the workbench keeps of its own: feedback on answers, evaluation question sets and runs.

Traces (traces/recording.py) may be pruned after their retention period; feedback and runs keep
the trace id or the numbers they need, not a foreign key to a trace.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from django.db import models

from conversations.models import (
    FEEDBACK_DOWN,
    FEEDBACK_ERROR_TYPES,
    FEEDBACK_RATINGS,
    FEEDBACK_UP,
)
from knowledge.models import KnowledgeBase

if TYPE_CHECKING:
    from workbench.pages.evaluation import RunProgress


class Feedback(models.Model):
    """A person's thumbs up or down on one answer (its trace), with an optional error type."""

    UP, DOWN = FEEDBACK_UP, FEEDBACK_DOWN
    RATINGS = FEEDBACK_RATINGS
    ERROR_TYPES = FEEDBACK_ERROR_TYPES

    trace_id = models.CharField(max_length=36, db_index=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True,
                             related_name="answer_feedback")
    rating = models.SmallIntegerField(choices=RATINGS)
    error_type = models.CharField(max_length=32, choices=ERROR_TYPES, blank=True, default="")
    comment = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["trace_id", "user"],
                                               name="one_feedback_per_answer_and_user")]
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.get_rating_display()} on {self.trace_id}"


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
        constraints = [models.UniqueConstraint(fields=["knowledge_base", "name"],
                                               name="one_question_set_name_per_base")]
        ordering = ["knowledge_base_id", "name"]

    def __str__(self) -> str:
        return self.name


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
    # Not a column: set by `run_settle` (workbench/pages/evaluation.py) on every run it reads.
    progress: RunProgress | None

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"run {self.pk} of {self.question_set}"
