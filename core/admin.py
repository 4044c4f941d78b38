"""What every app's admin shares: the read-only mixin. Registers no model itself."""

from __future__ import annotations

from typing import Generic, TypeVar

from django.db.models import Model
from django.http import HttpRequest

M = TypeVar("M", bound=Model)


class ReadOnlyAdminMixin(Generic[M]):
    """Rows written by the services only (ingest, the queue, `rag token create`): the admin
    looks, it never adds, edits or deletes. Mixed in before the admin of the same model:
    `class FooAdmin(ReadOnlyAdminMixin[Foo], admin.ModelAdmin[Foo])`."""

    def has_add_permission(self, request: HttpRequest, obj: M | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: M | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: M | None = None) -> bool:
        return False
