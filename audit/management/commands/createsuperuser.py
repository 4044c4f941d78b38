"""`rag createsuperuser`: Django's command, with the account it made in the audit log (never
the password). This app is listed before django.contrib.auth, so its command is the one `rag`
runs."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.management.commands import createsuperuser

from audit.records import AuditEvent, audit_record


class Command(createsuperuser.Command):
    def handle(self, *args: Any, **options: Any) -> None:
        users = self.UserModel._default_manager.db_manager(options["database"])
        before = set(users.values_list("pk", flat=True))
        super().handle(*args, **options)
        for user in users.exclude(pk__in=before).order_by("pk"):
            audit_record(AuditEvent(action="user.create", object_type="user", object_id=user.pk,
                                    object_name=user.get_username(),
                                    changes={"superuser": True, "password": "set"}))
