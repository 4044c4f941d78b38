"""`POST /ask/stream`: SSE framing, event order and errors before and after the first byte."""

from __future__ import annotations

import json

import pytest

from tests.answering.stub_openai import StubOpenAI
from tests.api.http import IN_DOMAIN, SECRET, error_of, openai, post, sse_events


def test_stream_framing_and_event_order(client, sample_index):
    response = post(client, "/ask/stream", {"question": IN_DOMAIN})
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/event-stream")
    events = sse_events(response)
    names = [name for name, _ in events]
    assert names[0] == "retrieval" and names[-2:] == ["citations", "done"]
    answer = json.loads(post(client, "/ask", {"question": IN_DOMAIN}).content)["answer"]
    assert "".join(data["text"] for name, data in events if name == "delta") == answer


def test_missing_llm_settings_is_503_before_streaming(client, sample_index, config_override):
    config_override(llm_provider="openai-compatible", llm_base_url="", llm_model="",
                    llm_api_key="")
    for path in ("/ask", "/ask/stream"):
        response = post(client, path, {"question": IN_DOMAIN})
        assert response.status_code == 503 and not getattr(response, "streaming", False)
        error = error_of(response)
        assert error["code"] == "llm_config_missing"
        assert set(error["details"]["missing"]) == {"LLM_BASE_URL", "LLM_API_KEY", "LLM_MODEL"}


def test_openai_compatible_stream_relays_deltas(client, sample_index, config_override):
    with StubOpenAI(behaviour="sse", deltas=["P1 ", "goes to ", "on-call [1] [7]."]) as stub:
        openai(config_override, stub)
        events = sse_events(post(client, "/ask/stream", {"question": IN_DOMAIN}))
        assert stub.requests[0].body["stream"] is True
    text = "".join(data["text"] for name, data in events if name == "delta")
    assert text == "P1 goes to on-call [1] ."
    citations = dict(events)["citations"]
    assert citations["invalid_citations_removed"] == 1


@pytest.mark.parametrize(("behaviour", "code"), [("status:500", "llm_upstream_error"),
                                                 ("sse_hang", "llm_timeout"),
                                                 ("sse_malformed", "llm_upstream_error")])
def test_failure_after_stream_start_is_an_error_event(client, sample_index, config_override,
                                                      behaviour, code):
    with StubOpenAI(behaviour=behaviour, hang_seconds=3) as stub:
        openai(config_override, stub)
        response = post(client, "/ask/stream", {"question": IN_DOMAIN})
        assert response.status_code == 200
        events = sse_events(response)
    assert events[0][0] == "retrieval"
    name, data = events[-1]
    assert name == "error" and data["error"]["code"] == code
    assert SECRET not in json.dumps(data)
