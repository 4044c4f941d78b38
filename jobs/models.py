"""The background job model: an unmanaged view of `background_jobs` (created by
jobs/migrations/0002_background_jobs.sql) for the admin. The queue reads and writes the table
through jobs/sql.py."""

from __future__ import annotations

from django.db import models


class BackgroundJob(models.Model):
    type = models.TextField()
    resource = models.TextField()
    payload = models.JSONField(default=dict)
    status = models.TextField()
    stage = models.TextField()
    progress = models.FloatField()
    attempt = models.IntegerField()
    max_attempts = models.IntegerField()
    run_after = models.DateTimeField()
    lease_owner = models.TextField(null=True)
    lease_token = models.UUIDField(null=True)
    lease_until = models.DateTimeField(null=True)
    last_error = models.TextField(null=True)
    result = models.JSONField(default=dict)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True)
    finished_at = models.DateTimeField(null=True)

    class Meta:
        managed = False
        db_table = "background_jobs"
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"job {self.pk} {self.type} ({self.status})"
