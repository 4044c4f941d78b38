"""What every app's admin shares: the read-only mixin. Registers no model itself."""

from __future__ import annotations

from django.db.models import Model
from django.http import HttpRequest


class ReadOnlyAdminMixin:
    """Rows written by the services only (ingest, the queue, `rag token create`): the admin
    looks, it never adds, edits or deletes."""

    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False
