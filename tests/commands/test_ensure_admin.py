"""`rag ensure_admin`: one administrator with a random password, created once."""

from __future__ import annotations

import io
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

pytestmark = pytest.mark.django_db


def run() -> str:
    out = io.StringIO()
    call_command("ensure_admin", stdout=out)
    return out.getvalue()


def test_first_run_creates_admin_with_the_printed_password():
    output = run()
    password = re.search(r"password: (\S+)", output).group(1)
    admin = get_user_model().objects.get(username="admin")
    assert admin.is_superuser and admin.is_staff and admin.check_password(password)
    assert len(password) >= 16


def test_second_run_keeps_the_password():
    first = re.search(r"password: (\S+)", run()).group(1)
    assert "already exists (password unchanged)" in run()
    assert get_user_model().objects.get(username="admin").check_password(first)
    assert get_user_model().objects.filter(is_superuser=True).count() == 1
