"""The audit entry model: an unmanaged view of `audit_logs` (audit/migrations/0002) for the
admin. Entries are written by audit/records.py only, and never changed."""

from __future__ import annotations

from django.db import models


class AuditEntry(models.Model):
    """One action as audit/records.py recorded it."""

    id = models.BigAutoField(primary_key=True)
    created_at = models.DateTimeField()
    actor = models.TextField()
    actor_kind = models.TextField()
    user_id = models.IntegerField(null=True)
    username = models.TextField(null=True)
    token_id = models.BigIntegerField(null=True)
    source = models.TextField()
    action = models.TextField()
    object_type = models.TextField()
    object_id = models.TextField()
    object_name = models.TextField()
    changes = models.JSONField(default=dict)
    request_id = models.TextField()
    address = models.TextField(null=True)

    class Meta:
        managed = False
        db_table = "audit_logs"
        ordering = ["-id"]
        verbose_name = "audit entry"
        verbose_name_plural = "audit log"

    def __str__(self) -> str:
        return f"{self.action} by {self.actor} ({self.created_at:%Y-%m-%d %H:%M:%S})"
