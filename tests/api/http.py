"""Helpers of the in-process HTTP contract tests: request, error body and SSE parsing."""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.test import Client

from answering.quote_places import PLACE_FIELDS, QUOTE_FIELDS
from tests.answering.stub_openai import StubOpenAI

IN_DOMAIN = "客户 P1 工单应该怎么升级？"
# The fake model's first sentence for it links a note: "[[Data Handling Policy]]：数据分级…".
INDEX_QUESTION = "ACME 知识库索引里列出了哪些运维手册？"
OUT_OF_DOMAIN = "明天巴黎天气如何？"
SECRET = "sk-test-SECRET-never-shown-4242"


def post(client: Client, path: str, body, *, raw: bool = False):
    data = body if raw else json.dumps(body)
    return client.post(path, data=data, content_type="application/json")


def error_of(response) -> dict:
    body = json.loads(response.content)
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}
    return body["error"]


def sse_events(response) -> list[tuple[str, dict]]:
    text = b"".join(response.streaming_content).decode("utf-8")
    assert text.endswith("\n\n")
    events = []
    for frame in text.split("\n\n")[:-1]:
        event_line, data_line = frame.split("\n")
        assert event_line.startswith("event: ") and data_line.startswith("data: ")
        events.append((event_line[7:], json.loads(data_line[6:])))
    return events


def openai(config_override, stub: StubOpenAI, **changes):
    values = {"llm_provider": "openai-compatible", "llm_base_url": stub.base_url,
              "llm_model": "stub-model", "llm_api_key": SECRET, "llm_timeout_seconds": 0.5}
    values.update(changes)
    return config_override(**values)




def slot_paths(project_root: Path, count: int) -> list[Path]:
    directory = project_root / ".local" / "llm-slots"
    directory.mkdir(parents=True, exist_ok=True)
    return [directory / f"slot-{index}" for index in range(count)]


@contextmanager
def slots_held(project_root: Path, count: int) -> Iterator[None]:
    """Hold the first `count` LLM slot files' locks directly, as another worker process would
    (each open file is its own lock holder, whatever the thread or process)."""
    fds = [os.open(path, os.O_RDWR | os.O_CREAT, 0o600) for path in slot_paths(project_root,
                                                                                count)]
    try:
        for fd in fds:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield
    finally:
        for fd in fds:
            os.close(fd)


def slots_free(project_root: Path, count: int) -> bool:
    """Whether none of the first `count` slots is held (each is taken and given back)."""
    try:
        with slots_held(project_root, count):
            return True
    except BlockingIOError:
        return False


def unquoted(citations: list[dict], *, quoted: list[dict] | None = None) -> list[dict]:
    """Citations without the quote fields that only the answer's text can give (the `retrieval`
    event is sent before there is any), and without the heading and pages of those the answer
    quoted (`quoted`: the answer's citations, by default these), which then name the chunk
    holding the quote rather than the block's best chunk."""
    return [{key: value for key, value in citation.items()
             if key not in QUOTE_FIELDS and not (answered.get("quote") and key in PLACE_FIELDS)}
            for citation, answered in zip(citations, quoted or citations, strict=True)]
