"""The status page's usage totals: calls, tokens and cost of the last 7 days per day, knowledge
base and model, added up from every caller's traces, so shown to staff only."""

from __future__ import annotations

import json
import re

from django.db import connection

from knowledge.bases import kb_get
from traces.recording import traced

PRICES = json.dumps({"gpt-x": {"input_per_1k": 0.01, "output_per_1k": 0.03}})


def record(*, model: str, base_id: int, prompt: int, completion: int) -> None:
    with traced(operation="ask", channel="cli") as trace:
        trace.llm_model, trace.knowledge_base_ids = model, [base_id]
        trace.prompt_tokens, trace.completion_tokens = prompt, completion


def table(html: str, name: str) -> str:
    return re.search(rf'<table id="usage-{name}">.*?</table>', html, re.DOTALL).group(0)


def test_staff_see_the_totals_of_the_last_7_days(reader, person, sample_index, config_override):
    config_override(RAG_MODEL_PRICES=PRICES)
    with connection.cursor() as cursor:  # other tests' committed traces are not this test's
        cursor.execute("DELETE FROM traces")
    base = kb_get("default").id
    record(model="openai-compatible/gpt-x", base_id=base, prompt=2000, completion=1000)
    record(model="openai-compatible/gpt-x", base_id=base, prompt=1000, completion=0)
    record(model="openai-compatible/local", base_id=base, prompt=7, completion=3)
    with connection.cursor() as cursor:  # past the page's 7 days: not counted
        cursor.execute("UPDATE traces SET created_at = now() - interval '8 days' "
                       "WHERE llm_model = 'openai-compatible/local'")
    assert 'id="usage"' not in reader.get("/workbench/status/").content.decode()
    html = person("ops", grants={"default": "reader"}, staff=True).get(
        "/workbench/status/").content.decode()
    assert "Usage of the last 7 days" in html
    # 3000 × 0.01 / 1000 + 1000 × 0.03 / 1000 = 0.06
    row = '<td class="num">2</td><td class="num">3000</td><td class="num">1000</td>' \
          '<td>0.0600 USD</td>'
    assert row in table(html, "model") and "openai-compatible/gpt-x" in table(html, "model")
    assert "openai-compatible/local" not in html
    assert row in table(html, "knowledge_base") and "<td>default</td>" in table(
        html, "knowledge_base")
    assert row in table(html, "day")
