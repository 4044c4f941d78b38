"""The administrator account of a fresh installation (`rag ensure_admin`)."""

from __future__ import annotations

import secrets

from django.contrib.auth import get_user_model

from core.db import db_errors_translated


def admin_ensure(*, username: str) -> str | None:
    """Create superuser `username` with a random password unless any superuser exists; returns
    the password (to print once) or None."""
    users = get_user_model()
    with db_errors_translated():
        if users.objects.filter(is_superuser=True).exists():
            return None
        password = secrets.token_urlsafe(12)
        users.objects.create_superuser(username=username, email="", password=password)
    return password
