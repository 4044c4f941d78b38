"""Changes made in Django's admin become audit entries: Django's admin announces each add,
change and deletion once through `log_addition`, `log_change` and `log_deletions` (its own
LogEntry); this mixin adds one audit entry for each, named `<object type>.create|update|delete`.
A deletion of many rows at once (the admin's bulk action) is one action and one entry."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Generic, TypeVar

from django.contrib.admin.models import LogEntry
from django.db.models import Model, QuerySet
from django.http import HttpRequest

from audit.records import AuditEvent, audit_record, changed

M = TypeVar("M", bound=Model)


class AuditedAdminMixin(Generic[M]):
    """Mixed in before `admin.ModelAdmin[M]`; `audit_object_type` names the object
    (`grant`, `knowledge_base`, `user`), and `audit_fields` the fields whose values the entry
    shows before and after (never a secret's: a password hash is not listed)."""

    audit_object_type = ""
    audit_fields: tuple[str, ...] = ()

    def save_model(self, request: HttpRequest, obj: M, form: Any, change: bool) -> None:
        if change and self.audit_fields:
            stored = type(obj)._default_manager.filter(pk=obj.pk).values(
                *self.audit_fields).first()
            obj._audit_before = stored or {}  # type: ignore[attr-defined]
        super().save_model(request, obj, form, change)  # type: ignore[misc]

    def log_addition(self, request: HttpRequest, obj: M, message: Any) -> LogEntry:
        entry = super().log_addition(request, obj, message)  # type: ignore[misc]
        self._audit("create", obj, message)
        return entry

    def log_change(self, request: HttpRequest, obj: M, message: Any) -> LogEntry:
        entry = super().log_change(request, obj, message)  # type: ignore[misc]
        self._audit("update", obj, message)
        return entry

    def log_deletions(self, request: HttpRequest, queryset: QuerySet[M] | Iterable[M]) -> Any:
        objects = list(queryset)
        entries = super().log_deletions(request, objects)  # type: ignore[misc]
        if len(objects) == 1:
            self._audit("delete", objects[0], "")
        elif objects:
            audit_record(AuditEvent(
                action=f"{self.audit_object_type}.delete", object_type=self.audit_object_type,
                object_name=f"{len(objects)} objects",
                changes={"ids": [obj.pk for obj in objects],
                         "names": [str(obj) for obj in objects]}))
        return entries

    def _audit(self, verb: str, obj: M, message: Any) -> None:
        changes = _admin_changes(message)
        after = {name: _plain(getattr(obj, name, None)) for name in self.audit_fields}
        stored = getattr(obj, "_audit_before", None)
        if verb == "update" and stored is not None:
            # (None for a change save_model did not make, such as a new password.)
            changes.update(changed({name: _plain(value) for name, value in stored.items()},
                                   after))
        elif verb == "create":
            changes.update({name: {"before": None, "after": value}
                            for name, value in after.items()})
        audit_record(AuditEvent(action=f"{self.audit_object_type}.{verb}",
                                object_type=self.audit_object_type, object_id=obj.pk,
                                object_name=str(obj), changes=changes))


def _plain(value: Any) -> Any:
    return value if value is None or isinstance(value, bool | int | float | str) else str(value)


def _admin_changes(message: Any) -> dict[str, Any]:
    """What the admin says it changed (field names and inline objects, never values: a user's
    password hash is one of its fields)."""
    if isinstance(message, list):
        return {"admin": message}
    if isinstance(message, str) and message.startswith("["):
        try:
            return {"admin": json.loads(message)}
        except ValueError:
            pass
    return {"admin": str(message)} if message else {}
