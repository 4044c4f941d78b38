"""Workbench test helpers: people with grants, signed in through Django's test client."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from access.models import Grant
from knowledge.bases import kb_get

PASSWORD = "a long test password 1"


@pytest.fixture
def person(db):
    """person(username, grants={"default": "reader"}, staff=False, superuser=False) -> a
    signed-in test client for a new user with those grants."""

    def make(username: str = "pat", *, grants: dict[str, str] | None = None, staff: bool = False,
             superuser: bool = False) -> Client:
        users = get_user_model().objects
        if superuser:
            user = users.create_superuser(username=username, password=PASSWORD)
        else:
            user = users.create_user(username=username, password=PASSWORD, is_staff=staff)
        for slug, role in (grants or {}).items():
            Grant.objects.create(user=user, knowledge_base_id=kb_get(slug).id, role=role)
        client = Client(raise_request_exception=False)
        client.force_login(user)
        client.user = user
        return client

    return make


@pytest.fixture
def reader(person):
    """A signed-in reader of the `default` knowledge base."""
    return person("reader", grants={"default": Grant.READER})


@pytest.fixture
def researcher(person):
    """A signed-in researcher of the `default` knowledge base (the lab, evaluation, traces)."""
    return person("researcher", grants={"default": Grant.RESEARCHER})


@pytest.fixture
def stub_llm(config_override, tmp_path):
    """The stub OpenAI-compatible server (tests/answering/stub_openai.py) as the LLM, one
    answer at a time. The project folder is the test's own: its one LLM slot file
    (<project>/.local/llm-slots) is then never held by a test running beside it."""
    from tests.answering.stub_openai import StubOpenAI

    with StubOpenAI() as stub:
        config_override(llm_provider="openai-compatible", llm_base_url=stub.base_url,
                        llm_model="stub-model", llm_api_key="sk-stub", llm_max_concurrency=1,
                        llm_queue_wait_seconds=0, project_root=tmp_path)
        stub.behaviour = "sse"
        yield stub
