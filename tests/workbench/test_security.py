"""What every workbench page shares: CSRF on every form post, no inline script or style for the
Content-Security-Policy to refuse, and a sign-in that never sends anyone to another site."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from tests.harness import ROOT

TEMPLATES = sorted((ROOT / "workbench" / "templates" / "workbench").glob("*.html"))
POSTS = ["/workbench/ask/", "/workbench/ask/stream", "/workbench/feedback/",
         "/workbench/lab/run", "/workbench/knowledge/default/upload/",
         "/workbench/documents/1/reindex/", "/workbench/documents/1/delete/",
         "/workbench/evaluation/sets/import", "/workbench/evaluation/runs/launch",
         "/workbench/logout/"]


@pytest.mark.parametrize("path", POSTS)
def test_every_post_needs_the_csrf_token(person, path):
    signed_in = person("csrf", superuser=True)
    client = Client(enforce_csrf_checks=True)
    client.force_login(signed_in.user)
    response = client.post(path, {"question": "q", "query": "q"})
    assert response.status_code == 403
    assert "CSRF" in response.content.decode()


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda path: path.name)
def test_no_template_has_inline_script_style_or_handlers(template):
    # `style-src 'self'` refuses style attributes too; an inline handler would need
    # 'unsafe-inline' for scripts.
    text = re.sub(r"\{#.*?#\}", "", template.read_text(encoding="utf-8"))  # comments
    assert not re.search(r"\sstyle\s*=", text)
    assert not re.search(r"\son[a-z]+\s*=", text, re.IGNORECASE)
    assert not re.search(r"<style\b", text)
    assert all("src=" in tag for tag in re.findall(r"<script\b[^>]*>", text))


@pytest.mark.parametrize("target", ["https://evil.example/", "//evil.example/",
                                    "/\\evil.example/", "javascript:alert(1)"])
def test_signing_in_never_leads_to_another_site(client, person, target):
    person("sam")
    response = client.post(f"/workbench/login/?next={target}",
                           {"username": "sam", "password": "a long test password 1",
                            "next": target})
    assert response.status_code == 302 and response["Location"] == "/workbench/ask/"


def test_signing_in_goes_on_to_the_page_asked_for(client, person):
    person("sam")
    response = client.post("/workbench/login/", {"username": "sam",
                                                  "password": "a long test password 1",
                                                  "next": "/workbench/lab/"})
    assert response.status_code == 302 and response["Location"] == "/workbench/lab/"
