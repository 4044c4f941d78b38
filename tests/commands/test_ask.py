"""`rag ask`: exit codes (as a subprocess) and how citations are printed."""

from __future__ import annotations

import json
from io import StringIO

from django.core.management import call_command

from ops.embedded_pg import free_port
from tests.conftest import PAGED_SOURCE, cli_env

QUESTION = "客户 P1 工单应该怎么升级？"


def test_missing_llm_settings_exit_4(clean_tables, run_cli):
    assert run_cli("ingest", "samples/acme-vault").returncode == 0
    result = run_cli("ask", QUESTION, env=cli_env(LLM_PROVIDER="openai-compatible"))
    assert result.returncode == 4 and "llm_config_missing" in result.stderr


def test_database_down_prints_the_error_line_and_no_log_line(run_cli):
    dead = f"postgresql://nobody@127.0.0.1:{free_port()}/local_rag"
    result = run_cli("ask", QUESTION, env=cli_env(DATABASE_URL=dead))
    lines = result.stderr.splitlines()
    assert result.returncode == 3
    assert [line for line in lines if line.startswith("{")] == []
    assert len(lines) == 1 and lines[0].startswith("error [database_unavailable]: ")


def test_ask_prints_each_citations_page_span_and_nothing_for_notes(paged_index):
    def ask_output(*args: str) -> str:
        out = StringIO()
        call_command("ask", QUESTION, "--top-k", "10", *args, stdout=out)
        return out.getvalue()

    citations = json.loads(ask_output("--json"))["citations"]
    shown = ask_output().split("\ncitations:\n", 1)[1].splitlines()
    lines = [line for line in shown if line.startswith("[")]
    assert len(lines) == len(citations) > 1
    labels = {(3, 3): "p. 3", (3, 4): "p. 3–4"}
    for number, (line, citation) in enumerate(zip(lines, citations, strict=True), start=1):
        heading = f" › {citation['heading']}" if citation["heading"] else ""
        if citation["source"] == PAGED_SOURCE:
            pages = labels[paged_index[citation["chunk_index"]]]
            assert line == f"[{number}] {PAGED_SOURCE}{heading}, {pages} ({citation['score']:.4f})"
        else:
            assert line == f"[{number}] {citation['source']}{heading} ({citation['score']:.4f})"
    joined = "\n".join(lines)
    assert ", p. 3" in joined
    assert any(", p. " not in line for line in lines)
