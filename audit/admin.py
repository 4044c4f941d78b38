"""The audit log's admin page (read-only: nobody adds, changes or deletes an entry here, and
the table's trigger refuses it anyway), and the mixin that makes the other admins' changes
audit entries."""

from __future__ import annotations

import json

from django.contrib import admin
from django.http import HttpRequest
from django.utils.html import format_html
from django.utils.safestring import SafeString

from audit.models import AuditEntry
from core.admin import ReadOnlyAdminMixin

SUMMARY_CHARS = 90  # of the changes' JSON in the list; the entry's page shows all of it


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnlyAdminMixin[AuditEntry], admin.ModelAdmin[AuditEntry]):
    list_display = ("created_at", "actor", "source", "action", "target", "changes_summary")
    list_filter = ("source", "action", "actor_kind", "object_type")
    search_fields = ("actor", "username", "action", "object_name", "object_id", "request_id")
    date_hierarchy = "created_at"
    readonly_fields = ("created_at", "actor", "actor_kind", "user_id", "username", "token_id",
                       "source", "action", "object_type", "object_id", "object_name",
                       "changes_shown", "request_id", "address")
    exclude = ("changes",)
    actions = None

    @admin.display(description="object")
    def target(self, obj: AuditEntry) -> str:
        return " ".join(part for part in (obj.object_type, obj.object_id and f"#{obj.object_id}",
                                          obj.object_name and f"«{obj.object_name}»") if part)

    @admin.display(description="what changed")
    def changes_summary(self, obj: AuditEntry) -> str:
        text = json.dumps(obj.changes, ensure_ascii=False) if obj.changes else ""
        return text if len(text) <= SUMMARY_CHARS else text[:SUMMARY_CHARS - 1] + "…"

    @admin.display(description="changes")
    def changes_shown(self, obj: AuditEntry) -> SafeString:
        return format_html("<pre>{}</pre>", json.dumps(obj.changes, ensure_ascii=False,
                                                       indent=2))

    def has_view_permission(self, request: HttpRequest, obj: AuditEntry | None = None) -> bool:
        # Who changed what is the admins' to read: superusers, not every staff member.
        return bool(getattr(request.user, "is_superuser", False))
