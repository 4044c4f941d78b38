"""The traces pages: the list with filters and pages, one trace in full with its feedback, and
who sees which trace (superusers all; anyone else only traces wholly of bases they research,
staff or not; readers none)."""

from __future__ import annotations

import re

import pytest
from django.db import connection

from access.models import Grant
from knowledge.bases import kb_create, kb_get
from traces.models import Trace
from traces.recording import Trace as TraceRecord
from traces.recording import trace_finish
from workbench.models import Feedback
from workbench.pages.traces import traces_visible


@pytest.fixture
def bases(db):
    """`alpha` and `beta` (empty), and no earlier traces (rolled back with the test)."""
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM traces")
    kb_create(slug="alpha")
    kb_create(slug="beta")
    return {slug: kb_get(slug).id for slug in ("alpha", "beta")}


def record(*, bases: list[int], operation: str = "ask", channel: str = "api", **fields) -> str:
    trace = TraceRecord(operation=operation, channel=channel, knowledge_base_ids=bases,
                        **fields)
    trace_finish(trace)
    return trace.id


def listed(response) -> list[str]:
    return re.findall(r'<tr data-trace-id="([0-9a-f-]+)">', response.content.decode())


@pytest.mark.parametrize("staff", [False, True])
def test_a_reader_may_not_see_traces_staff_or_not(person, bases, staff):
    client = person("pat", grants={"alpha": Grant.READER}, staff=staff)
    trace_id = record(bases=[bases["alpha"]])
    assert client.get("/workbench/traces/").status_code == 403
    assert client.get(f"/workbench/traces/{trace_id}/").status_code == 403
    assert 'href="/workbench/traces/"' not in client.get("/workbench/ask/").content.decode()


def test_signed_out_visitors_are_sent_to_sign_in(client, bases):
    response = client.get("/workbench/traces/")
    assert response.status_code == 302 and response["Location"].startswith("/workbench/login/")


def test_a_superuser_sees_every_trace_with_its_columns(person, bases):
    root = person("root", superuser=True)
    both = record(bases=[bases["alpha"], bases["beta"]], mode="rag", caller="user ana",
                  prompt_tokens=100, completion_tokens=20, token_source="provider")
    none = record(bases=[], operation="search", channel="cli", status="error",
                  error_code="invalid_request")
    response = root.get("/workbench/traces/")
    html = response.content.decode()
    assert response.status_code == 200
    assert set(listed(response)) == {both, none}
    row = html[html.index(f'data-trace-id="{both}"'):]
    row = row[:row.index("</tr>")]
    assert "alpha, beta" in row and "user ana" in row and ">rag<" in row
    assert '<td class="num">120 <span class="muted">(provider)</span></td>' in row
    assert f'href="/workbench/traces/{both}/"' in row
    assert "<code>invalid_request</code>" in html


def test_the_list_filters_by_operation_channel_and_status(person, bases):
    root = person("root", superuser=True)
    search = record(bases=[bases["alpha"]], operation="search", channel="workbench")
    ask = record(bases=[bases["alpha"]], operation="ask", channel="api")
    failed = record(bases=[bases["alpha"]], operation="ask", channel="api", status="error")
    assert listed(root.get("/workbench/traces/?operation=search")) == [search]
    assert listed(root.get("/workbench/traces/?channel=api&status=ok")) == [ask]
    assert listed(root.get("/workbench/traces/?status=error")) == [failed]
    html = root.get("/workbench/traces/?channel=workbench").content.decode()
    assert '<option value="workbench" selected>' in html


def test_the_list_shows_fifty_a_page_newest_first(person, bases):
    root = person("root", superuser=True)
    ids = [record(bases=[bases["alpha"]], operation="search") for _ in range(53)]
    with connection.cursor() as cursor:  # one second apart, in the order they were made
        for age, trace_id in enumerate(reversed(ids)):
            cursor.execute("UPDATE traces SET created_at = now() - make_interval(secs => %s) "
                           "WHERE id = %s", [age, trace_id])
    first = root.get("/workbench/traces/?operation=search")
    assert listed(first) == list(reversed(ids))[:50]
    assert 'href="?operation=search&amp;page=2"' in first.content.decode()
    assert listed(root.get("/workbench/traces/?operation=search&page=2")) == ids[:3][::-1]


@pytest.mark.parametrize("role", [Grant.RESEARCHER, Grant.MAINTAINER])
def test_a_researcher_sees_only_traces_of_bases_they_research(person, bases, role):
    staff = person("sue", grants={"alpha": role})
    own = record(bases=[bases["alpha"]])
    other = record(bases=[bases["beta"]])
    mixed = record(bases=[bases["alpha"], bases["beta"]])
    unscoped = record(bases=[])
    assert listed(staff.get("/workbench/traces/")) == [own]
    assert staff.get(f"/workbench/traces/{own}/").status_code == 200
    for hidden in (other, mixed, unscoped):
        assert staff.get(f"/workbench/traces/{hidden}/").status_code == 404
    html = staff.get("/workbench/traces/").content.decode()
    assert other not in html and "beta" not in html
    assert 'href="/workbench/traces/"' in staff.get("/workbench/ask/").content.decode()


def test_a_researcher_does_not_see_traces_of_a_base_they_only_read(person, bases):
    rae = person("rae", grants={"alpha": Grant.RESEARCHER, "beta": Grant.READER})
    own = record(bases=[bases["alpha"]])
    read_only = record(bases=[bases["beta"]])
    mixed = record(bases=[bases["alpha"], bases["beta"]])
    assert listed(rae.get("/workbench/traces/")) == [own]
    for hidden in (read_only, mixed):
        assert rae.get(f"/workbench/traces/{hidden}/").status_code == 404


def test_the_listing_is_filtered_in_the_query_not_after_it(person, bases):
    rae = person("rae", grants={"alpha": Grant.RESEARCHER, "beta": Grant.READER})
    caller = rae.get("/workbench/ask/").wsgi_request.caller
    where = str(traces_visible(caller=caller).query)
    assert "<@" in where and str(bases["alpha"]) in where
    assert f"{bases['beta']}" not in where.split("<@", 1)[1]


def test_a_researcher_of_a_base_without_traces_sees_no_trace(person, bases):
    staff = person("sol", grants={"beta": Grant.RESEARCHER}, staff=True)
    record(bases=[bases["alpha"]])
    response = staff.get("/workbench/traces/")
    assert response.status_code == 200 and listed(response) == []
    assert "No trace matches." in response.content.decode()


def test_a_staff_member_without_grants_may_not_see_traces(person, bases):
    staff = person("sol", grants={}, staff=True)
    assert staff.get("/workbench/traces/").status_code == 403


def test_an_unknown_trace_is_404(person, bases):
    root = person("root", superuser=True)
    assert root.get("/workbench/traces/6f1c1c3e-0000-4000-8000-000000000000/").status_code == 404


def test_the_detail_shows_everything_recorded_and_the_feedback(person, bases, sample_index,
                                                               config_override):
    root = person("root", superuser=True)
    default = kb_get("default").id
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, content_hash FROM chunks ORDER BY id LIMIT 2")
        (chunk_id, content_hash), (stale_id, _) = cursor.fetchall()
    config_override(rag_trace_text=True)
    trace_id = record(
        bases=[default], mode="rag", caller="user ana", user_id=root.user.pk,
        parameters={"mode": "hybrid", "top_k": 5, "candidates": 50, "rerank": "features"},
        timings_ms={"embed": 1.5, "vector": 2.5, "llm_total": 812.0},
        embedding_model="fake/fake-lexical-v1", llm_model="openai-compatible/stub-model",
        prompt_tokens=321, completion_tokens=12, token_source="provider", prompt_version="v7",
        citations=[{"chunk_id": chunk_id, "content_hash": content_hash},
                   {"chunk_id": stale_id, "content_hash": "0" * 64},
                   {"chunk_id": 99999999, "content_hash": "gone"}],
        question="Who escalates a P1?", answer="The duty manager [1].")
    Feedback.objects.create(trace_id=trace_id, user=root.user, rating=Feedback.DOWN,
                            error_type="wrong_citation", comment="cites the wrong note")
    response = root.get(f"/workbench/traces/{trace_id}/")
    html = response.content.decode()
    assert response.status_code == 200
    for text in ("user ana", "default", "hybrid", "candidates", "features",
                 'data-stage-ms="vector">2.5 ms', 'data-stage-ms="llm_total">812.0 ms',
                 "fake/fake-lexical-v1", "openai-compatible/stub-model", "v7",
                 'data-tokens="prompt">321', 'data-tokens="completion">12',
                 'data-token-source="provider">reported by the LLM server',
                 f'href="/workbench/chunks/{chunk_id}/"', content_hash, "unchanged",
                 "changed since", "no longer in the index",
                 "Who escalates a P1?", "The duty manager [1].",
                 "not helpful", "a citation does not support the answer",
                 "cites the wrong note"):
        assert text in html, text
    assert "<script>" not in html and "style=" not in html


def test_counted_tokens_and_unrecorded_text_say_so(person, bases):
    root = person("root", superuser=True)
    trace_id = record(bases=[bases["alpha"]], prompt_tokens=50, completion_tokens=5,
                      token_source="counted", question="kept?", answer="no")
    html = root.get(f"/workbench/traces/{trace_id}/").content.decode()
    assert 'data-token-source="counted">counted by local-rag' in html
    assert "Not recorded" in html and "kept?" not in html  # RAG_TRACE_TEXT is off
    assert "No feedback on this trace." in html


def test_a_lab_run_shows_up_in_the_list(person, bases, sample_index):
    root = person("root", superuser=True)
    response = root.post("/workbench/lab/run", {
        "query": "P1 escalation", "mode": "vector", "top_k": "2", "candidates": "5",
        "rerank": "none", "knowledge_base": ""})
    trace_id = response["X-Request-ID"]
    assert listed(root.get("/workbench/traces/?channel=workbench")) == [trace_id]
    assert Trace.objects.get(id=trace_id).operation == "search"


@pytest.mark.parametrize("query", ["operation=%00", "status=x%00y", "channel=nowhere"])
def test_a_filter_value_no_trace_has_matches_nothing(person, bases, query):
    root = person("root", superuser=True)
    record(bases=[bases["alpha"]])
    response = root.get(f"/workbench/traces/?{query}")
    assert response.status_code == 200 and listed(response) == []
    assert "No trace matches." in response.content.decode()


@pytest.mark.parametrize("page", ["abc", "0", "-3", "99999999999999999999"])
def test_a_page_that_is_not_a_page_number_shows_a_page_of_traces(person, bases, page):
    root = person("root", superuser=True)
    trace_id = record(bases=[bases["alpha"]])
    response = root.get("/workbench/traces/", {"page": page})
    assert response.status_code == 200 and listed(response) == [trace_id]


def test_the_detail_shows_the_cost_of_a_priced_model_and_a_dash_without_a_price(
        person, bases, config_override):
    config_override(RAG_MODEL_PRICES='{"gpt-x": {"input_per_1k": 0.01, "output_per_1k": 0.03}}')
    root = person("root", superuser=True)
    priced = record(bases=[bases["alpha"]], llm_model="openai-compatible/gpt-x",
                    prompt_tokens=2000, completion_tokens=1000, token_source="provider")
    unpriced = record(bases=[bases["alpha"]], llm_model="openai-compatible/other",
                      prompt_tokens=2000, completion_tokens=1000, token_source="provider")
    html = root.get(f"/workbench/traces/{priced}/").content.decode()
    assert '<td class="num" data-cost>0.0500 USD</td>' in html  # 0.02 + 0.03
    html = root.get(f"/workbench/traces/{unpriced}/").content.decode()
    assert '<td class="num" data-cost>–</td>' in html
