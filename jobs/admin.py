"""Read-only admin of the background jobs: what is queued, running, failed, and why.

Found by the admin site like any app's admin.py. Jobs change only through the queue
(`rag jobs retry|cancel`, the worker), never by editing a row."""

from __future__ import annotations

from django.contrib import admin

from core.admin import ReadOnlyAdminMixin
from jobs.models import BackgroundJob


@admin.register(BackgroundJob)
class BackgroundJobAdmin(ReadOnlyAdminMixin[BackgroundJob], admin.ModelAdmin[BackgroundJob]):
    list_display = ("id", "type", "resource", "status", "stage", "progress_percent", "attempts",
                    "run_after", "updated_at")
    list_filter = ("status", "type")
    search_fields = ("resource", "last_error")
    fields = ("type", "resource", "status", "stage", "progress", "attempt", "max_attempts",
              "run_after", "lease_owner", "lease_until", "last_error", "payload", "result",
              "created_at", "updated_at", "started_at", "finished_at")

    @admin.display(description="progress", ordering="progress")
    def progress_percent(self, obj: BackgroundJob) -> str:
        return f"{obj.progress:.0%}"

    @admin.display(description="attempt", ordering="attempt")
    def attempts(self, obj: BackgroundJob) -> str:
        return f"{obj.attempt}/{obj.max_attempts}"
