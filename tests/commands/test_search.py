"""`rag search`: how each result's source is printed."""

from __future__ import annotations

import json
from io import StringIO

from django.core.management import call_command

from tests.conftest import PAGED_SOURCE

QUESTION = "客户 P1 工单应该怎么升级？"


def search_output(*args: str) -> str:
    out = StringIO()
    call_command("search", QUESTION, "--top-k", "10", *args, stdout=out)
    return out.getvalue()


def test_search_prints_each_sources_page_span_and_nothing_for_notes(paged_index):
    results = json.loads(search_output("--json"))["results"]
    lines = [line for line in search_output().splitlines() if line.startswith("[")]
    assert len(lines) == len(results) == 10
    labels = {(3, 3): "p. 3", (3, 4): "p. 3–4"}
    for number, (line, result) in enumerate(zip(lines, results, strict=True), start=1):
        heading = f" › {result['heading']}" if result["heading"] else ""
        if result["source"] == PAGED_SOURCE:
            pages = labels[paged_index[result["chunk_index"]]]
            expected = f"[{number}] {PAGED_SOURCE}{heading}, {pages} ({result['score']:.4f})"
        else:
            expected = f"[{number}] {result['source']}{heading} ({result['score']:.4f})"
        assert line == expected
    shown = "\n".join(lines)
    assert ", p. 3 (" in shown and ", p. 3–4 (" in shown
    assert any(", p. " not in line for line in lines)
