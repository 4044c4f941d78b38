"""The trace model: an unmanaged view of `traces` (created by traces/migrations/0002_traces.sql)
for the admin and the workbench's traces pages. Traces are written by traces/recording.py only."""

from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.db import models


class Trace(models.Model):
    """One search or answer as traces/recording.py recorded it (read-only in the admin)."""

    id = models.UUIDField(primary_key=True)
    created_at = models.DateTimeField()
    operation = models.TextField()
    channel = models.TextField()
    caller = models.TextField()
    user_id = models.IntegerField(null=True)
    token_id = models.BigIntegerField(null=True)
    knowledge_base_ids = ArrayField(models.BigIntegerField(), default=list)
    status = models.TextField()
    error_code = models.TextField(null=True)
    mode = models.TextField(null=True)
    parameters = models.JSONField(default=dict)
    timings_ms = models.JSONField(default=dict)
    embedding_model = models.TextField(null=True)
    llm_model = models.TextField(null=True)
    prompt_tokens = models.IntegerField(null=True)
    completion_tokens = models.IntegerField(null=True)
    token_source = models.TextField(null=True)  # provider or counted
    prompt_version = models.TextField(null=True)
    citations = models.JSONField(default=list)
    question = models.TextField(null=True)
    answer = models.TextField(null=True)
    cost_amount = models.FloatField(null=True)  # both NULL: no price, or no tokens
    cost_currency = models.TextField(null=True)

    class Meta:
        managed = False
        db_table = "traces"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.operation} {self.id} ({self.status})"
