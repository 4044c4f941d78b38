"""The workbench's 404 and 403 pages: in the workbench's look (its base template, stylesheet
and menu) and language, and a short fragment, not a whole page, for an htmx request."""

from __future__ import annotations

import pytest

from access.models import Grant
from knowledge.bases import kb_create

ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-CN,zh;q=0.9"}
HTMX = {"HTTP_HX_REQUEST": "true"}
STYLESHEET = '<link rel="stylesheet" href="/static/workbench/app.css">'


@pytest.fixture
def field_reader(person, db):
    kb_create(slug="field", name="Field reports")
    return person("fern", grants={"field": Grant.READER})


def test_a_missing_page_is_the_workbenchs_404_page(reader):
    response = reader.get("/workbench/no-such-page/")
    html = response.content.decode()
    assert response.status_code == 404
    assert STYLESHEET in html and '<header class="topbar">' in html
    assert 'href="/workbench/ask/"' in html  # the menu, as on every page
    assert '<h1 id="error-title">Page not found</h1>' in html
    assert '<a href="/workbench/">Back to the workbench</a>' in html
    assert "<title>Page not found · local-rag workbench</title>" in html


def test_a_hidden_base_is_the_same_404_page(field_reader):
    response = field_reader.get("/workbench/knowledge/default/")
    assert response.status_code == 404
    assert '<h1 id="error-title">Page not found</h1>' in response.content.decode()


def test_the_404_page_is_in_chinese_for_a_chinese_browser(reader):
    response = reader.get("/workbench/no-such-page/", **ZH)
    html = response.content.decode()
    assert response.status_code == 404
    assert '<html lang="zh-hans">' in html and STYLESHEET in html
    assert '<h1 id="error-title">页面没有找到</h1>' in html and "返回工作台" in html
    assert "Page not found" not in html


def test_a_refused_change_is_the_workbenchs_403_page_in_both_languages(field_reader):
    response = field_reader.post("/workbench/knowledge/field/upload/")
    html = response.content.decode()
    assert response.status_code == 403
    assert STYLESHEET in html and '<h1 id="error-title">Not allowed</h1>' in html
    assert "An operator can give you the role it needs" in html
    chinese = field_reader.post("/workbench/knowledge/field/upload/", **ZH).content.decode()
    assert '<h1 id="error-title">不允许</h1>' in chinese and "Not allowed" not in chinese


def test_a_staff_page_is_403_for_a_reader_in_the_same_look(reader):
    response = reader.get("/workbench/traces/")
    assert response.status_code == 403
    assert '<header class="topbar">' in response.content.decode()


def test_an_htmx_request_gets_a_fragment_not_a_whole_page(reader, field_reader):
    missing = reader.get("/workbench/jobs/999999/", **HTMX)
    refused = field_reader.post("/workbench/knowledge/field/upload/", **HTMX)
    for response, heading in ((missing, "Page not found"), (refused, "Not allowed")):
        html = response.content.decode()
        assert '<div class="card http-error" role="alert">' in html
        assert f"<strong>{heading}</strong>" in html
        assert "<html" not in html and "topbar" not in html


def test_the_api_keeps_its_json_404(client, db):
    response = client.get("/no-such-endpoint")
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
