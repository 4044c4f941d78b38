"""Failed sign-ins and lock-outs, which Django and django-axes announce only by signal: each
failed attempt is one `signin.failed` entry naming the user name tried (bounded, never the
password, which Django removes from the credentials first), and the attempt that locks an
account or address out (the RAG_LOGIN_FAILURE_LIMIT-th) adds one `signin.locked_out`."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.signals import user_login_failed
from django.utils.module_loading import import_string

from audit.context import Actor
from audit.records import AuditEvent, audit_record

ANONYMOUS = Actor(kind="anonymous", label="anonymous")
USERNAME_MAX = 150


def signin_failed(sender: Any, credentials: dict[str, Any], request: Any = None,
                  **kwargs: Any) -> None:
    tried = str(credentials.get("username") or "")[:USERNAME_MAX]
    audit_record(AuditEvent(action="signin.failed", object_type="user", object_name=tried,
                            changes={"username": tried}), actor=ANONYMOUS)


def signin_locked_out(sender: Any, request: Any = None, username: str | None = None,
                      ip_address: str | None = None, **kwargs: Any) -> None:
    # django-axes repeats its signal for every attempt past the limit; the lock-out is the
    # attempt that reached it.
    if getattr(request, "axes_failures_since_start", None) != settings.AXES_FAILURE_LIMIT:
        return
    tried = str(username or "")[:USERNAME_MAX]
    minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
    audit_record(AuditEvent(action="signin.locked_out", object_type="user", object_name=tried,
                            changes={"username": tried, "address": ip_address,
                                     "failures": settings.AXES_FAILURE_LIMIT,
                                     "minutes": minutes}),
                 actor=ANONYMOUS)


def receivers_connect() -> None:
    user_login_failed.connect(signin_failed, dispatch_uid="audit_signin_failed")
    # django-axes ships no type information: its signal is looked up by name. (Its own
    # receiver of failures connected first, so the attempt that locks records the lock-out
    # just before its failure.)
    user_locked_out = import_string("axes.signals.user_locked_out")
    user_locked_out.connect(signin_locked_out, dispatch_uid="audit_signin_locked_out")
