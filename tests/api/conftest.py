"""The Django test client for the API tests: errors come back as responses, never raised."""

from __future__ import annotations

import pytest
from django.test import Client


def team_create() -> None:
    """Two bases, `field` (mo maintains it, ana reads it) and `hidden` (neither may read it),
    and a superuser `root`: the callers of the access tests of the newer endpoints."""
    from django.contrib.auth import get_user_model

    from access.models import Grant
    from knowledge.bases import kb_create

    field = kb_create(slug="field", name="Field reports")
    kb_create(slug="hidden", name="Hidden")
    users = get_user_model().objects
    users.create_superuser(username="root", password="pw")
    for username, role in (("mo", Grant.MAINTAINER), ("ana", Grant.READER)):
        user = users.create_user(username=username, password="pw")
        Grant.objects.create(user=user, knowledge_base_id=field.id, role=role)


@pytest.fixture
def client() -> Client:
    return Client(raise_request_exception=False)


@pytest.fixture
def project(config_override, tmp_path):
    """A project folder of its own for the upload areas, and a `field` knowledge base."""
    from knowledge.bases import kb_create

    config = config_override(project_root=tmp_path)
    kb_create(slug="field", name="Field reports")
    return config
