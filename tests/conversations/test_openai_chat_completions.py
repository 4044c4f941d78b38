"""`POST /v1/chat/completions` in process: the completion and chunk shapes, a follow-up answered
from the earlier messages, the Sources list, no_answer, refused and ignored parameters, the
LLM-failure paths and the OpenAI error shape of every error on /v1/."""

from __future__ import annotations

import json

import pytest
from django.db import connection

from answering.modes import NO_ANSWER_MESSAGE
from tests.answering.stub_openai import StubOpenAI
from tests.api.http import IN_DOMAIN, OUT_OF_DOMAIN, openai, slots_held
from tests.conftest import PAGED_SOURCE

PATH = "/v1/chat/completions"
EXPORT = "What are the Atlas CRM export limits?"
EXPORT_FOLLOW_UP = "and how many rows can they hold?"


def chat(client, body: dict, *, token: str | None = None, raw: str | None = None):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    return client.post(PATH, data=raw if raw is not None else json.dumps(body),
                       content_type="application/json", **headers)


def ask(question: str, *, model: str = "local-rag", **extra) -> dict:
    return {"model": model, "messages": [{"role": "user", "content": question}], **extra}


def completion(response) -> dict:
    assert response.status_code == 200, response.content
    return json.loads(response.content)


def openai_error(response, status: int) -> dict:
    assert response.status_code == status, response.content
    body = json.loads(response.content)
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}
    return body["error"]


def chunks(response) -> list[dict | str]:
    assert response["Content-Type"].startswith("text/event-stream")
    text = b"".join(response.streaming_content).decode("utf-8")
    frames = text.split("\n\n")
    assert frames[-1] == "" and all(frame.startswith("data: ") for frame in frames[:-1])
    return [frame[6:] if frame == "data: [DONE]" else json.loads(frame[6:])
            for frame in frames[:-1]]


def test_it_answers_in_the_chat_completion_shape(client, paged_index):
    response = chat(client, ask(IN_DOMAIN))
    body = completion(response)
    assert set(body) == {"id", "object", "created", "model", "choices", "usage", "citations",
                         "mode", "standalone_query", "notice"}
    assert (body["object"], body["model"], body["mode"]) == ("chat.completion", "local-rag",
                                                             "rag")
    assert body["id"] == f"chatcmpl-{response['X-Request-ID']}"
    (choice,) = body["choices"]
    assert (choice["index"], choice["finish_reason"], choice["message"]["role"]) == (
        0, "stop", "assistant")
    content = choice["message"]["content"]
    answer, sources = content.split("\n\nSources:\n")
    assert "[1]" in answer
    first = body["citations"][0]
    assert first["number"] == 1 and first["source"] == PAGED_SOURCE
    pages = "p. 3" if first["page_end"] == 3 else "p. 3–4"
    assert sources.splitlines()[0] == f"- [1] {PAGED_SOURCE} › {first['heading']}, {pages}"
    usage = body["usage"]
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_a_follow_up_is_answered_from_the_earlier_messages(client, sample_index):
    first = completion(chat(client, ask(EXPORT)))
    follow_up = completion(chat(client, {"model": "local-rag", "messages": [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": EXPORT},
        {"role": "assistant", "content": first["choices"][0]["message"]["content"]},
        {"role": "user", "content": [{"type": "text", "text": EXPORT_FOLLOW_UP}]}]}))
    assert follow_up["standalone_query"] != EXPORT_FOLLOW_UP
    assert follow_up["mode"] == "rag"
    assert {citation["source"] for citation in follow_up["citations"]} & {
        "products/Atlas CRM FAQ.md", "products/Atlas CRM.md"}
    # Alone, the same words find nothing: the earlier messages are what make it answerable.
    alone = completion(chat(client, ask(EXPORT_FOLLOW_UP)))
    assert alone["mode"] == "no_answer" and alone["standalone_query"] == EXPORT_FOLLOW_UP


def test_no_answer_is_an_ordinary_assistant_message(client, sample_index):
    body = completion(chat(client, ask(OUT_OF_DOMAIN)))
    assert body["mode"] == "no_answer" and body["citations"] == []
    assert body["choices"][0]["message"]["content"].startswith(NO_ANSWER_MESSAGE)
    assert body["choices"][0]["finish_reason"] == "stop"
    assert body["usage"] == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


def test_a_stream_sends_chunks_the_sources_the_usage_and_done(client, sample_index):
    whole = completion(chat(client, ask(IN_DOMAIN)))
    sent = chunks(chat(client, ask(IN_DOMAIN, stream=True,
                                   stream_options={"include_usage": True})))
    assert sent[-1] == "[DONE]"
    *text_chunks, last, usage_chunk = sent[:-1]
    assert {chunk["object"] for chunk in sent[:-1]} == {"chat.completion.chunk"}
    assert text_chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    content = "".join(chunk["choices"][0]["delta"].get("content", "") for chunk in text_chunks)
    assert content == whole["choices"][0]["message"]["content"]
    assert all(chunk["usage"] is None for chunk in [*text_chunks, last])
    assert last["choices"][0] == {"index": 0, "delta": {}, "logprobs": None,
                                  "finish_reason": "stop"}
    assert last["citations"] == whole["citations"] and last["mode"] == "rag"
    assert usage_chunk["choices"] == [] and usage_chunk["usage"]["completion_tokens"] > 0
    assert len({chunk["id"] for chunk in sent[:-1]}) == 1


def test_a_stream_without_include_usage_has_no_usage(client, sample_index):
    sent = chunks(chat(client, ask(IN_DOMAIN, stream=True)))
    assert sent[-1] == "[DONE]" and sent[-2]["choices"][0]["finish_reason"] == "stop"
    assert not any("usage" in chunk for chunk in sent[:-1])


def test_a_completion_is_traced_on_the_openai_channel(client, sample_index):
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM traces")
    chat(client, ask(IN_DOMAIN))
    b"".join(chat(client, ask(IN_DOMAIN, stream=True)).streaming_content)
    with connection.cursor() as cursor:
        cursor.execute("SELECT operation, channel, mode, parameters->>'openai_model' "
                       "FROM traces ORDER BY created_at")
        assert cursor.fetchall() == [("ask", "openai", "rag", "local-rag"),
                                     ("ask_stream", "openai", "rag", "local-rag")]


@pytest.mark.parametrize(("extra", "param"), [
    ({"n": 2}, "n"),
    ({"tools": [{"type": "function", "function": {"name": "f"}}]}, "tools"),
    ({"tool_choice": "required"}, "tool_choice"),
    ({"response_format": {"type": "json_object"}}, "response_format"),
    ({"logprobs": True}, "logprobs"),
    ({"modalities": ["text", "audio"]}, "modalities"),
    ({"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}]}]},
     "messages[0].content"),
    ({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "x"}]},
     "messages"),
    ({"messages": [{"role": "tool", "content": "42", "tool_call_id": "t"},
                   {"role": "user", "content": "hi"}]}, "messages[0]"),
    ({"messages": [{"role": "user", "content": "   "}]}, "messages"),
    ({"messages": []}, "messages"),
    ({"model": ""}, "model"),
])
def test_an_unsupported_or_malformed_request_is_400_naming_its_param(client, db, extra, param):
    error = openai_error(chat(client, {**ask(IN_DOMAIN), **extra}), 400)
    assert (error["type"], error["code"], error["param"]) == (
        "invalid_request_error", "invalid_request", param)


def test_sampling_parameters_and_unknown_fields_are_ignored(client, sample_index):
    body = completion(chat(client, ask(IN_DOMAIN, temperature=0.2, top_p=0.9, max_tokens=5,
                                       stop=["\n"], seed=1, user="u", n=1, tool_choice="none",
                                       response_format={"type": "text"}, frequency_penalty=0.5,
                                       presence_penalty=0.5, something_new={"a": 1})))
    assert body["mode"] == "rag"


def test_a_body_that_is_not_json_is_400(client, db):
    error = openai_error(chat(client, {}, raw="{not json"), 400)
    assert error["code"] == "invalid_request"


def test_a_body_over_one_megabyte_is_413(client, db):
    error = openai_error(chat(client, {}, raw=json.dumps(ask("x" * (1024 * 1024 + 10)))), 413)
    assert (error["type"], error["code"]) == ("invalid_request_error", "payload_too_large")


def test_an_unknown_model_is_404(client, db):
    for model in ("gpt-4o", "kb:nowhere", "kb:"):
        error = openai_error(chat(client, ask(IN_DOMAIN, model=model)), 404)
        assert (error["type"], error["code"], error["param"]) == (
            "not_found_error", "not_found", "model")


def test_errors_outside_the_api_take_the_openai_shape_on_v1(client, db):
    assert openai_error(client.get("/v1/nowhere"), 404)["code"] == "not_found"
    assert openai_error(client.get(PATH), 405)["code"] == "method_not_allowed"
    refused = client.post(PATH, data="question", content_type="text/plain")
    assert openai_error(refused, 415)["code"] == "unsupported_media_type"
    # The rest of the site keeps its unified body.
    assert set(json.loads(client.get("/nowhere").content)["error"]) == {
        "code", "message", "details"}


def test_the_model_failing_answers_the_sources_by_default(client, sample_index,
                                                          config_override):
    with StubOpenAI(behaviour="status:500") as stub:
        openai(config_override, stub, llm_max_retries=0)
        body = completion(chat(client, ask(IN_DOMAIN)))
    assert body["notice"]["code"] == "llm_unavailable"
    content = body["choices"][0]["message"]["content"]
    assert content.startswith(body["notice"]["message"])
    # The notice cites nothing, so the list names every source that was found.
    assert content.split("\n\nSources:\n")[1].count("\n- [") == len(body["citations"]) - 1


@pytest.mark.parametrize(("behaviour", "status", "code"), [
    ("status:500", 502, "llm_upstream_error"), ("hang", 504, "llm_timeout")])
def test_the_model_failing_is_its_error_when_asked(client, sample_index, config_override,
                                                   behaviour, status, code):
    with StubOpenAI(behaviour=behaviour, hang_seconds=3) as stub:
        openai(config_override, stub, llm_max_retries=0)
        error = openai_error(chat(client, ask(IN_DOMAIN, on_llm_error="error")), status)
    assert (error["type"], error["code"]) == ("server_error", code)


def test_a_stream_that_fails_after_its_first_byte_ends_with_an_error_chunk(
        client, sample_index, config_override):
    with StubOpenAI(behaviour="sse_cut") as stub:
        openai(config_override, stub, llm_max_retries=0)
        sent = chunks(chat(client, ask(IN_DOMAIN, stream=True, on_llm_error="error")))
    assert sent[-1] == "[DONE]"
    assert sent[-2]["error"]["code"] == "llm_upstream_error"
    assert sent[-2]["error"]["type"] == "server_error"


def test_all_llm_slots_busy_is_503_with_retry_after(client, sample_index, config_override,
                                                    tmp_path):
    with StubOpenAI() as stub, slots_held(tmp_path, 1):
        openai(config_override, stub, project_root=tmp_path, llm_max_concurrency=1,
               llm_queue_wait_seconds=0.2)
        response = chat(client, ask(IN_DOMAIN, on_llm_error="error"))
    error = openai_error(response, 503)
    assert (error["type"], error["code"]) == ("server_error", "llm_busy")
    assert response["Retry-After"] == "1"
