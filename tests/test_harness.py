"""The test-database guard refuses anything that could be the application's data."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness import UnsafeTestDatabase, assert_safe_test_database


def test_name_without_test_suffix_is_refused():
    with pytest.raises(UnsafeTestDatabase, match="does not end with '_test'"):
        assert_safe_test_database(test_url="postgresql://u@h/local_rag",
                                  main_url="postgresql://u@h/other")


def test_same_name_as_database_url_is_refused():
    with pytest.raises(UnsafeTestDatabase, match="both name"):
        assert_safe_test_database(test_url="postgresql://u@h/app_test",
                                  main_url="postgresql://u@other:5433/app_test")


def test_distinct_test_database_is_accepted():
    assert assert_safe_test_database(test_url="postgresql://u@h/local_rag_test",
                                     main_url="postgresql://u@h/local_rag") == "local_rag_test"


def test_pytest_aborts_before_touching_a_badly_named_database(tmp_path):
    import subprocess
    import sys

    from tests.conftest import cli_env
    from tests.harness import ROOT

    env = cli_env(TEST_DATABASE_URL="postgresql://u@127.0.0.1:1/local_rag")
    env["LOCALRAG_ENV_FILE"] = str(ROOT / ".env.sample")
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             str(ROOT / ("tests/test_harness.py"
                                         "::test_distinct_test_database_is_accepted"))],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 3
    assert "unsafe test database" in result.stdout + result.stderr


def test_config_changed_takes_a_variable_or_a_field_and_checks_either_as_at_start_up(
        tmp_path: Path) -> None:
    from core.config import ConfigError, get_config
    from tests.harness import config_changed

    base = get_config()
    assert config_changed(base, rag_top_k=3).rag_top_k == 3
    assert config_changed(base, RAG_TOP_K="3").rag_top_k == 3
    assert config_changed(base, rag_outbound_local_hosts=frozenset()).rag_outbound_local_hosts == (
        frozenset())
    moved = config_changed(base, project_root=tmp_path, rag_min_similarity=None)
    assert (moved.project_root, moved.vault_path) == (tmp_path, base.vault_path)
    with pytest.raises(ConfigError) as err:
        config_changed(base, rag_top_k=21)
    assert err.value.variable == "RAG_TOP_K"
    with pytest.raises(ConfigError) as err:  # a rule across settings
        config_changed(base, embedding_provider="local-qwen3")
    assert err.value.variable == "EMBEDDING_MODEL"
    with pytest.raises(TypeError, match="rag_topk is neither a setting"):
        config_changed(base, rag_topk=3)
    with pytest.raises(TypeError, match="RAG_TOP_K takes the text"):
        config_changed(base, RAG_TOP_K=3)
    with pytest.raises(ValueError, match="reads as"):  # the parser drops the trailing slash
        config_changed(base, llm_provider="fake", embedding_provider="openai-compatible",
                       embedding_model="m", embedding_base_urls=("http://gpu-1/v1/",))
