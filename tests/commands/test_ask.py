"""`rag ask` as a subprocess: exit codes of the ask command."""

from __future__ import annotations

from tests.conftest import cli_env

QUESTION = "客户 P1 工单应该怎么升级？"


def test_missing_llm_settings_exit_4(clean_tables, run_cli):
    assert run_cli("ingest", "samples/acme-vault").returncode == 0
    result = run_cli("ask", QUESTION, env=cli_env(LLM_PROVIDER="openai-compatible"))
    assert result.returncode == 4 and "llm_config_missing" in result.stderr
