"""`POST /ask/stream`: SSE framing, event order and errors before and after the first byte."""

from __future__ import annotations

import json
import time

import pytest

from answering.refusal import SIGNALS_CUT
from tests.answering.stub_openai import StubOpenAI
from tests.api.http import (
    IN_DOMAIN,
    SECRET,
    error_of,
    openai,
    post,
    slots_free,
    slots_held,
    sse_events,
    unquoted,
)
from tests.conftest import PAGED_SOURCE


def test_stream_framing_and_event_order(client, sample_index):
    response = post(client, "/ask/stream", {"question": IN_DOMAIN})
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/event-stream")
    events = sse_events(response)
    names = [name for name, _ in events]
    assert names[0] == "retrieval" and names[-3:] == ["citations", "usage", "done"]
    answer = json.loads(post(client, "/ask", {"question": IN_DOMAIN}).content)["answer"]
    assert "".join(data["text"] for name, data in events if name == "delta") == answer


def test_stream_retrieval_event_says_how_the_refusal_rule_decided(client, sample_index):
    events = dict(sse_events(post(client, "/ask/stream", {"question": IN_DOMAIN})))
    refusal = events["retrieval"]["refusal"]
    assert refusal["rule"] == "signals" and refusal["grounded"] is True
    assert refusal["threshold"] is None and refusal["probability"] >= SIGNALS_CUT
    assert set(refusal["signals"]) == {"top", "gap", "support", "coverage", "cjk_share"}
    assert refusal["signals"]["top"] == round(events["retrieval"]["confidence"], 6)


def test_stream_citations_carry_page_spans_and_null_for_notes(client, paged_index):
    ask = json.loads(post(client, "/ask", {"question": IN_DOMAIN, "top_k": 10}).content)
    events = dict(sse_events(post(client, "/ask/stream", {"question": IN_DOMAIN, "top_k": 10})))
    assert events["citations"]["citations"] == ask["citations"]
    assert unquoted(events["retrieval"]["citations"], quoted=ask["citations"]) == unquoted(
        ask["citations"])
    spans = {(c["source"], c["page_start"], c["page_end"])
             for c in events["retrieval"]["citations"]}
    assert any(source == PAGED_SOURCE for source, _, _ in spans)
    assert spans <= {(PAGED_SOURCE, 3, 3), (PAGED_SOURCE, 3, 4)} | {
        (source, None, None) for source, _, _ in spans}
    assert any(source != PAGED_SOURCE and (start, end) == (None, None)
               for source, start, end in spans)
    assert all(source == PAGED_SOURCE or (start, end) == (None, None)
               for source, start, end in spans)


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


def test_stream_without_text_ends_with_timeout_event_at_the_idle_limit(client, sample_index,
                                                                       config_override):
    # Comments and empty deltas keep the socket busy but say nothing.
    with StubOpenAI(behaviour="sse_idle", drip_seconds=0.05) as stub:
        openai(config_override, stub, llm_timeout_seconds=0.6)
        started = time.monotonic()
        events = sse_events(post(client, "/ask/stream", {"question": IN_DOMAIN}))
        elapsed = time.monotonic() - started
    name, data = events[-1]
    assert name == "error" and data["error"]["code"] == "llm_timeout"
    assert "delta" not in [name for name, _ in events]
    assert elapsed < 0.6 + 1.0


def test_stream_past_its_total_cap_ends_with_timeout_event(client, sample_index,
                                                           config_override):
    with StubOpenAI(behaviour="sse_slow", drip_seconds=0.05) as stub:
        openai(config_override, stub, llm_timeout_seconds=0.5, llm_stream_max_seconds=1.0)
        started = time.monotonic()
        events = sse_events(post(client, "/ask/stream", {"question": IN_DOMAIN}))
        elapsed = time.monotonic() - started
    names = [name for name, _ in events]
    assert names.count("delta") > 5
    name, data = events[-1]
    assert name == "error" and data["error"]["code"] == "llm_timeout"
    assert "LLM_STREAM_MAX_SECONDS" in data["error"]["message"]
    assert elapsed < 1.0 + 1.0


def test_busy_llm_is_a_json_503_before_the_stream_starts(client, sample_index, config_override,
                                                         tmp_path):
    with StubOpenAI(behaviour="sse") as stub, slots_held(tmp_path, 1):
        openai(config_override, stub, project_root=tmp_path, llm_max_concurrency=1,
               llm_queue_wait_seconds=0.2)
        response = post(client, "/ask/stream", {"question": IN_DOMAIN})
        assert stub.requests == []
    assert response.status_code == 503 and not getattr(response, "streaming", False)
    assert error_of(response)["code"] == "llm_busy"
    assert response["Retry-After"] == "1"


def test_stream_holds_its_slot_until_the_events_run_out(client, sample_index, config_override,
                                                        tmp_path):
    with StubOpenAI(behaviour="sse") as stub:
        openai(config_override, stub, project_root=tmp_path, llm_max_concurrency=1)
        response = post(client, "/ask/stream", {"question": IN_DOMAIN})
        assert not slots_free(tmp_path, 1)  # taken before the first byte
        events = sse_events(response)
    assert events[-1][0] == "done"
    assert slots_free(tmp_path, 1)


def test_stream_closed_early_releases_its_slot_and_upstream(client, sample_index,
                                                            config_override, tmp_path):
    with StubOpenAI(behaviour="sse_hang", hang_seconds=5) as stub:
        openai(config_override, stub, project_root=tmp_path, llm_max_concurrency=1,
               llm_timeout_seconds=10)
        response = post(client, "/ask/stream", {"question": IN_DOMAIN})
        assert response.status_code == 200
        frames = iter(response.streaming_content)
        while b"event: delta" not in next(frames):
            pass
        # The model is now "thinking" for 5 s; the client goes away meanwhile.
        started = time.monotonic()
        response.close()
        assert time.monotonic() - started < 0.5
        assert slots_free(tmp_path, 1)


def test_stream_closed_before_its_first_event_releases_its_slot(client, sample_index,
                                                                config_override, tmp_path):
    with StubOpenAI(behaviour="sse") as stub:
        openai(config_override, stub, project_root=tmp_path, llm_max_concurrency=1)
        response = post(client, "/ask/stream", {"question": IN_DOMAIN})
        assert response.status_code == 200 and not slots_free(tmp_path, 1)
        response.close()
        assert slots_free(tmp_path, 1)
        assert stub.requests == []


def test_stream_error_event_does_not_name_the_llm_server(client, sample_index,
                                                         config_override):
    with StubOpenAI(behaviour="status:503") as stub:
        openai(config_override, stub, llm_max_retries=0)
        text = b"".join(post(client, "/ask/stream", {"question": IN_DOMAIN}).streaming_content)
        port = stub.base_url.rsplit(":", 1)[1].split("/")[0]
    assert b"llm_upstream_error" in text
    assert stub.base_url.encode() not in text and port.encode() not in text
