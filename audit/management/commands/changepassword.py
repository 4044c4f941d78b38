"""`rag changepassword [NAME]`: Django's command, with the change in the audit log (never the
password). This app is listed before django.contrib.auth, so its command is the one `rag` runs."""

from __future__ import annotations

import getpass
from typing import Any

from django.contrib.auth.management.commands import changepassword

from audit.records import AuditEvent, audit_record


class Command(changepassword.Command):
    def handle(self, *args: Any, **options: Any) -> str | None:
        done = super().handle(*args, **options)
        username = options.get("username") or getpass.getuser()
        audit_record(AuditEvent(action="user.update", object_type="user", object_name=username,
                                changes={"password": "changed"}))
        return done
