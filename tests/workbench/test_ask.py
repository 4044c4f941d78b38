"""The Ask page: sign-in, answers in three looks, source cards, streaming, feedback."""

from __future__ import annotations

import re

import pytest

from tests.api.http import sse_events
from traces.models import Trace
from workbench.models import Feedback

QUESTION = "How long does a P1 incident have before it is escalated?"
UNKNOWN = "What is the airspeed velocity of an unladen swallow?"


def test_the_ask_page_needs_a_sign_in(client, db):
    response = client.get("/workbench/ask/")
    assert response.status_code == 302
    assert response["Location"].startswith("/workbench/login/")


def test_a_signed_out_htmx_request_sends_the_whole_page_to_sign_in(client, db):
    # A poll of a job after the session ended: not the sign-in form inside the fragment.
    response = client.get("/workbench/jobs/1/", HTTP_HX_REQUEST="true",
                          HTTP_HX_CURRENT_URL="http://testserver/workbench/knowledge/default/")
    assert response.status_code == 401 and response.content == b""
    assert response["HX-Redirect"] == (
        "/workbench/login/?next=/workbench/knowledge/default/")


def test_signing_in_with_the_form_leads_to_ask(client, person):
    person("sam")
    page = client.get("/workbench/login/")
    assert page.status_code == 200 and b'name="csrfmiddlewaretoken"' in page.content
    response = client.post("/workbench/login/", {"username": "sam",
                                                  "password": "a long test password 1"})
    assert response.status_code == 302 and response["Location"] == "/workbench/ask/"
    assert client.get("/workbench/ask/").status_code == 200


def test_every_workbench_page_carries_a_strict_csp(reader):
    response = reader.get("/workbench/ask/")
    policy = response["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "'unsafe-inline'" not in policy
    assert "default-src 'self'" in policy
    assert "<script>" not in response.content.decode()  # only <script src=...>


def test_a_reader_gets_an_answer_with_source_cards(reader, sample_index):
    response = reader.post("/workbench/ask/", {"question": QUESTION})
    html = response.content.decode()
    assert response.status_code == 200
    assert 'data-look="answer"' in html
    cards = re.findall(r'<li class="source-card" id="source-(\d+)">', html)
    assert cards and cards[0] == "1"
    # A card's link opens its source at its quote when it has one.
    chunk_links = re.findall(r'class="card-title" href="/workbench/chunks/(\d+)/(?:\?[^"]*)?"',
                             html)
    assert len(chunk_links) == len(cards)
    start = html.index('id="source-1"')
    first_card = html[start:html.index("</li>", start)]
    assert ">policies/Support Escalation Policy.md</a>" in first_card


def test_source_cards_show_a_notes_markdown_rendered(reader, sample_index):
    response = reader.post("/workbench/ask/",
                           {"question": "P2 High 核心功能严重受损 绕过方案 P3 Normal P4 Low"})
    html = response.content.decode()
    excerpts = re.findall(r'<div class="excerpt">(.*?)</div>', html, flags=re.S)
    assert excerpts, "no source cards"
    assert not [text for text in excerpts if "**" in text or "\n#" in text]
    assert any("<strong>P2（High）</strong>" in text for text in excerpts)


def test_a_question_the_base_does_not_know_has_its_own_look(reader, sample_index):
    html = reader.post("/workbench/ask/", {"question": UNKNOWN}).content.decode()
    assert 'data-look="no-answer"' in html
    assert "The knowledge base does not know" in html
    assert 'data-look="answer"' not in html


def test_an_error_has_its_own_look(reader, db):
    # Nothing is ingested: retrieval is not ready.
    response = reader.post("/workbench/ask/", {"question": QUESTION})
    html = response.content.decode()
    assert response.status_code == 503
    assert 'data-look="error"' in html and "retrieval_not_ready" in html


def test_a_person_without_grants_reads_nothing(person, sample_index):
    client = person("nogrant")
    html = client.post("/workbench/ask/", {"question": QUESTION}).content.decode()
    assert "source-card" not in html
    assert "You may not read any knowledge base yet" in html


def test_a_base_outside_the_grants_is_not_offered_nor_accepted(reader, sample_index):
    from knowledge.bases import kb_create

    kb_create(slug="secret", name="Secret base")
    page = reader.get("/workbench/ask/").content.decode()
    assert 'value="secret"' not in page
    response = reader.post("/workbench/ask/", {"question": QUESTION, "knowledge_base": "secret"})
    assert response.status_code == 422


def test_the_stream_sends_text_then_the_rendered_answer(reader, sample_index):
    response = reader.post("/workbench/ask/stream", {"question": QUESTION})
    assert response.status_code == 200
    assert response["X-Request-ID"]
    events = sse_events(response)
    names = [name for name, _ in events]
    assert names[0] == "status" and names[-1] == "result"
    assert "delta" in names
    result = events[-1][1]
    assert result["look"] == "answer" and 'class="source-card"' in result["html"]
    trace = Trace.objects.get(id=response["X-Request-ID"])
    assert trace.channel == "workbench" and trace.operation == "ask_stream"
    assert trace.user_id == reader.user.pk and trace.citations


def test_citation_markers_link_to_their_card(reader, sample_index):
    html = reader.post("/workbench/ask/", {"question": QUESTION}).content.decode()
    assert re.search(r'<a class="cite" href="#source-1">\[1\]</a>', html)


def test_feedback_is_stored_on_the_answer(reader, sample_index):
    response = reader.post("/workbench/ask/", {"question": QUESTION})
    trace_id = response["X-Request-ID"]
    done = reader.post("/workbench/feedback/", {"trace_id": trace_id, "rating": "down",
                                                 "error_type": "wrong_citation",
                                                 "comment": "card 2 is off-topic"})
    assert done.status_code == 200 and b"recorded" in done.content
    feedback = Feedback.objects.get(trace_id=trace_id)
    assert (feedback.rating, feedback.error_type, feedback.user_id) == (
        Feedback.DOWN, "wrong_citation", reader.user.pk)
    # A second vote changes the first.
    reader.post("/workbench/feedback/", {"trace_id": trace_id, "rating": "up"})
    feedback = Feedback.objects.get(trace_id=trace_id)
    assert feedback.rating == Feedback.UP and feedback.error_type == ""


@pytest.mark.parametrize("trace_id", ["not-a-uuid", "00000000-0000-0000-0000-000000000000"])
def test_feedback_on_an_unknown_answer_is_refused(reader, db, trace_id):
    response = reader.post("/workbench/feedback/", {"trace_id": trace_id, "rating": "up"})
    assert response.status_code == 404 and not Feedback.objects.exists()


def test_feedback_on_someone_elses_answer_is_refused(reader, person, sample_index):
    trace_id = reader.post("/workbench/ask/", {"question": QUESTION})["X-Request-ID"]
    other = person("other", grants={"default": "reader"})
    response = other.post("/workbench/feedback/", {"trace_id": trace_id, "rating": "up"})
    assert response.status_code == 404 and not Feedback.objects.exists()


def test_forms_need_the_csrf_token(person, sample_index):
    from django.contrib.auth import get_user_model
    from django.test import Client

    person("csrf")
    client = Client(enforce_csrf_checks=True)
    client.force_login(get_user_model().objects.get(username="csrf"))
    assert client.post("/workbench/ask/", {"question": QUESTION}).status_code == 403
    assert client.post("/workbench/ask/stream", {"question": QUESTION}).status_code == 403


def test_an_answer_with_links_shows_them_safely(reader, sample_index, stub_llm):
    stub_llm.deltas = ["See [the runbook](https://wiki.example/p1) ",
                       "and [this](javascript:alert(1)) [1]."]
    response = reader.post("/workbench/ask/", {"question": QUESTION})
    html = response.content.decode()
    assert response.status_code == 200 and 'data-look="answer"' in html
    assert ('<a href="https://wiki.example/p1" rel="noopener noreferrer nofollow">the runbook</a>'
            in html)
    assert 'href="javascript:' not in html and "[this](javascript:alert(1))" in html


def test_a_streamed_answer_with_a_link_ends_with_its_result(reader, sample_index, stub_llm):
    stub_llm.deltas = ["See [the runbook](https://wiki.example/p1) [1]."]
    events = sse_events(reader.post("/workbench/ask/stream", {"question": QUESTION}))
    name, result = events[-1]
    assert name == "result" and result["look"] == "answer"
    assert 'href="https://wiki.example/p1"' in result["html"]


def test_a_generation_that_fails_gives_the_page_its_errors_status(reader, sample_index,
                                                                  stub_llm):
    stub_llm.behaviour = "status:401"
    response = reader.post("/workbench/ask/", {"question": QUESTION})
    html = response.content.decode()
    assert response.status_code == 502
    assert 'data-look="error"' in html and "<code>llm_auth_failed</code>" in html
    trace = Trace.objects.get(id=response["X-Request-ID"])
    assert (trace.status, trace.error_code) == ("error", "llm_auth_failed")


def test_a_page_that_fails_after_taking_the_llm_slot_gives_it_back(reader, sample_index,
                                                                   stub_llm, monkeypatch):
    from core.db import DatabaseUnavailable
    from workbench.pages import ask as answers

    cards = answers.source_cards

    def unavailable(stream):
        raise DatabaseUnavailable("the database went away")

    monkeypatch.setattr(answers, "source_cards", unavailable)
    failed = reader.post("/workbench/ask/", {"question": QUESTION})
    assert failed.status_code == 503 and "database_unavailable" in failed.content.decode()
    monkeypatch.setattr(answers, "source_cards", cards)
    # One slot in all (LLM_MAX_CONCURRENCY=1, no waiting): free again, not llm_busy.
    response = reader.post("/workbench/ask/", {"question": QUESTION})
    assert response.status_code == 200 and 'data-look="answer"' in response.content.decode()


def card_of(html: str, number: int, anchor: str = "source-") -> str:
    start = html.index(f'id="{anchor}{number}"')
    return html[start:html.index("</li>", start)]


P1_TIMELINE = "客户提交的 P1 工单按以下时间线升级。"  # the first sentence of block 1


def test_each_cited_card_shows_its_quote_and_opens_the_source_at_it(reader, sample_index):
    from knowledge.models import Chunk

    # The fake model quotes the first sentence of each of the top blocks.
    html = reader.post("/workbench/ask/", {"question": QUESTION}).content.decode()
    first = card_of(html, 1)
    assert f'<span class="muted">Quoted:</span> “{P1_TIMELINE}”' in first
    link = re.search(r'href="/workbench/chunks/(\d+)/\?quote_start=(\d+)&amp;quote_end=(\d+)"',
                     first)
    assert link is not None
    chunk_id, start, end = (int(value) for value in link.groups())
    assert Chunk.objects.get(pk=chunk_id).content[start:end] == P1_TIMELINE
    assert "Unverified" not in html and "could not be verified" not in html
    assert 'class="cite cite-unverified"' not in html


@pytest.mark.parametrize("path", ["/workbench/ask/", "/workbench/ask/stream"])
def test_a_citation_its_source_does_not_support_is_marked_unverified(reader, sample_index,
                                                                     stub_llm, path):
    # [1] for a sentence of block 1, [2] for one that no block says; [3] is not cited at all.
    stub_llm.deltas = [f"{P1_TIMELINE} [1] ",
                       "Swallows fly at eleven metres per second. [2]"]
    response = reader.post(path, {"question": QUESTION})
    html = (sse_events(response)[-1][1]["html"] if path.endswith("stream")
            else response.content.decode())
    first, second, third = card_of(html, 1), card_of(html, 2), card_of(html, 3)
    assert f"Quoted:</span> “{P1_TIMELINE}”" in first
    assert "Unverified" not in first
    assert ('<span class="badge badge-unverified" title="The answer cites this source, but no '
            'sentence of it supports what is cited">Unverified<span class="visually-hidden"> '
            "citation: no sentence of this source supports what the answer cites it for"
            "</span></span>") in second
    assert "Quoted:" not in second
    assert "Quoted:" not in third and "Unverified" not in third
    assert '<span class="unsupported-count">1 citation could not be verified in its source' in html
    assert re.search(r'<a class="cite cite-unverified" href="#source-2" [^>]*'
                     r'aria-label="\[2\], unverified">\[2\]</a>', html)
    assert '<a class="cite" href="#source-1">[1]</a>' in html


def test_two_unsupported_markers_are_counted_in_the_plural(reader, sample_index, stub_llm):
    stub_llm.deltas = ["Swallows fly at eleven metres per second [1]. ",
                       "Coconuts migrate south in winter [2]."]
    html = reader.post("/workbench/ask/", {"question": QUESTION}).content.decode()
    assert "2 citations could not be verified in their sources" in html
    assert html.count('<span class="badge badge-unverified"') == 2


def test_the_filters_narrow_the_sources_and_a_bad_line_is_named(reader, sample_index):
    response = reader.post("/workbench/ask/", {"question": QUESTION, "folder": "runbooks",
                                               "format": "markdown"})
    html = response.content.decode()
    assert response.status_code == 200 and "<details class=\"filters\" open>" in html
    sources = set(re.findall(r'>((?:policies|runbooks|products|sales|support)/[^<]+)</a>', html))
    assert sources and all(source.startswith("runbooks/") for source in sources)
    response = reader.post("/workbench/ask/", {"question": QUESTION,
                                               "conditions": "year >= 2019\nregion Yunnan"})
    assert response.status_code == 422
    assert "line 2 is not" in response.content.decode()
