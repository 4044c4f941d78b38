"""What the workbench keeps of its own: feedback on answers.

Traces (traces/recording.py) may be pruned after their retention period; feedback keeps the
trace id, not a foreign key to a trace. Evaluation's question sets and runs are evaluation's
(evaluation/models.py).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from conversations.models import (
    FEEDBACK_DOWN,
    FEEDBACK_ERROR_TYPES,
    FEEDBACK_RATINGS,
    FEEDBACK_UP,
)


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
