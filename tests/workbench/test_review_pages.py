"""The review pages: the queue of a person's bases, a task's page image beside its text with
the numbers to check marked, and a maintainer's accept, fix and exclude (with CSRF)."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from access.models import Grant
from tests.review.conftest import TABLE_MARKER, review_vault, rows  # noqa: F401 (a fixture)


@pytest.fixture
def task_id(request) -> int:
    request.getfixturevalue("review_vault")  # imported above: tests/review's fixture
    return rows("SELECT id FROM review_tasks")[0][0]


def test_the_queue_lists_the_task_for_a_maintainer(person, task_id):
    maintainer = person("mo", grants={"field": Grant.MAINTAINER})
    html = maintainer.get("/workbench/review/?kb=field").content.decode()
    assert f'href="/workbench/review/{task_id}/"' in html and "table.pdf" in html
    base = maintainer.get("/workbench/knowledge/field/").content.decode()
    assert 'href="/workbench/review/?kb=field"' in base


def test_the_task_page_shows_the_page_image_beside_the_marked_text(person, task_id):
    maintainer = person("mo", grants={"field": Grant.MAINTAINER})
    response = maintainer.get(f"/workbench/review/{task_id}/")
    html = response.content.decode()
    assert response.status_code == 200
    document_id = rows("SELECT document_id FROM review_tasks")[0][0]
    assert f'src="/workbench/documents/{document_id}/pages/1.png"' in html
    assert re.findall(r'<td class="flagged"><mark>(.*?)</mark></td>', html) == [
        "12 kg", "3.5 mm", "220 V", "45%"]
    assert TABLE_MARKER in html
    for action in ("accept", "exclude", "fix"):
        assert f'action="/workbench/review/{task_id}/{action}/"' in html
    assert html.count("csrfmiddlewaretoken") >= 3


def test_a_reader_gets_403_and_a_stranger_404(person, task_id):
    reader = person("rita", grants={"field": Grant.READER})
    stranger = person("sam")
    assert reader.get(f"/workbench/review/{task_id}/").status_code == 403
    assert stranger.get(f"/workbench/review/{task_id}/").status_code == 404
    assert reader.post(f"/workbench/review/{task_id}/accept/").status_code == 403


def test_accept_from_the_page_closes_the_task(person, task_id):
    maintainer = person("mo", grants={"field": Grant.MAINTAINER})
    response = maintainer.post(f"/workbench/review/{task_id}/accept/")
    assert response.status_code == 302
    assert rows("SELECT status, resolved_by FROM review_tasks") == [("accepted", "mo")]
    html = maintainer.get(response["Location"]).content.decode()
    assert "Save the correction" not in html


def test_an_empty_fix_is_shown_as_an_error_on_the_page(person, task_id):
    maintainer = person("mo", grants={"field": Grant.MAINTAINER})
    response = maintainer.post(f"/workbench/review/{task_id}/fix/", {"text": "  "})
    assert response.status_code == 422 and "empty" in response.content.decode()
    assert rows("SELECT status FROM review_tasks") == [("open",)]


def test_a_post_without_the_csrf_token_is_refused(db, task_id):
    from django.contrib.auth import get_user_model

    from knowledge.bases import kb_get

    user = get_user_model().objects.create_user("mo", password="pw 12345 long enough")
    Grant.objects.create(user=user, knowledge_base_id=kb_get("field").id, role=Grant.MAINTAINER)
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    assert client.post(f"/workbench/review/{task_id}/exclude/").status_code == 403
    assert rows("SELECT status FROM review_tasks") == [("open",)]


def test_the_queue_pages_past_its_first_fifty(person, task_id, monkeypatch):
    from workbench.pages import review as review_pages

    monkeypatch.setattr(review_pages, "LIST_PAGE", 1)
    rows("INSERT INTO review_tasks (knowledge_base_id, document_id, document_version_id, kind, "
         "page, extracted_text) SELECT knowledge_base_id, document_id, document_version_id, "
         "'ocr_page', 1, 'second' FROM review_tasks RETURNING id")
    maintainer = person("mo", grants={"field": Grant.MAINTAINER})
    first = maintainer.get("/workbench/review/?kb=field").content.decode()
    assert "1 of 2 tasks" in first and "offset=1" in first
    second = maintainer.get("/workbench/review/?kb=field&offset=1").content.decode()
    assert "offset=0" in second and f'href="/workbench/review/{task_id}/"' not in second
