"""Who a workbench request acts for: the signed-in person, as a `Caller` of
knowledge/access.py — the same object the API and MCP use, so every page reads exactly the
knowledge bases that person's grants allow."""

from __future__ import annotations

from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest

from knowledge.access import caller_for_user


def person_view(view):
    """Sign-in required; `request.caller` is the person's Caller (also `request.auth`, which
    the trace middleware records as the trace's caller)."""

    @login_required
    @wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs):
        request.caller = request.auth = caller_for_user(request.user)
        return view(request, *args, **kwargs)

    return wrapped


def admin_view(view):
    """Like `person_view`, for staff and superusers only (403 for anyone else)."""

    @person_view
    @wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs):
        if not (request.user.is_staff or request.user.is_superuser):
            raise PermissionDenied("only administrators may see this page")
        return view(request, *args, **kwargs)

    return wrapped
