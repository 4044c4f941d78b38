"""Configuration: precedence, empty-as-unset, discovery, validation and safe display."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from core.config import ConfigError, config_load
from tests.harness import ROOT


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname='x'\n")
    (tmp_path / ".env.sample").write_text("")
    return tmp_path


def write_env(project: Path, **values: str) -> None:
    (project / ".env").write_text("".join(f"{k}={v}\n" for k, v in values.items()))


def test_os_env_beats_dotenv_beats_default(project: Path):
    write_env(project, RAG_TOP_K="7", LLM_TIMEOUT_SECONDS="12")
    config = config_load(environ={"RAG_TOP_K": "9"}, start_dir=project)
    assert config.rag_top_k == 9 and config.sources["RAG_TOP_K"] == "env"
    assert config.llm_timeout_seconds == 12 and config.sources["LLM_TIMEOUT_SECONDS"] == ".env"
    assert config.rag_context_token_budget == 6000
    assert config.sources["RAG_CONTEXT_TOKEN_BUDGET"] == "default"


def test_empty_os_variable_does_not_hide_dotenv_value(project: Path):
    write_env(project, RAG_TOP_K="7")
    config = config_load(environ={"RAG_TOP_K": ""}, start_dir=project)
    assert config.rag_top_k == 7
    assert config.sources["RAG_TOP_K"] == ".env"


def test_empty_dotenv_value_falls_back_to_default(project: Path):
    write_env(project, RAG_TOP_K="", LLM_PROVIDER="")
    config = config_load(environ={}, start_dir=project)
    assert config.rag_top_k == 5 and config.llm_provider == "fake"
    assert config.sources["RAG_TOP_K"] == "default"


def test_dotenv_is_found_from_a_subdirectory(project: Path):
    write_env(project, RAG_TOP_K="11")
    nested = project / "a" / "b"
    nested.mkdir(parents=True)
    config = config_load(environ={}, start_dir=nested)
    assert config.rag_top_k == 11
    assert config.project_root == project
    assert config.env_file == project / ".env"


def test_explicit_env_file_overrides_discovery(project: Path, tmp_path_factory):
    write_env(project, RAG_TOP_K="11")
    other = tmp_path_factory.mktemp("elsewhere") / "custom.env"
    other.write_text("RAG_TOP_K=3\n")
    config = config_load(environ={}, start_dir=project, env_file=other)
    assert config.rag_top_k == 3 and config.env_file == other


def test_missing_explicit_env_file_is_an_error(project: Path):
    with pytest.raises(ConfigError) as err:
        config_load(environ={}, start_dir=project, env_file=project / "nope.env")
    assert err.value.variable == "--env-file"


def test_code_defaults_leave_llm_model_url_and_key_empty(project: Path):
    config = config_load(environ={}, start_dir=project)
    assert (config.llm_model, config.llm_base_url, config.llm_api_key) == ("", "", "")
    assert config.embedding_model == "fake-lexical-v1"
    assert config.embedding_dim == 1024


@pytest.mark.parametrize(
    ("variable", "value", "fragment"),
    [
        ("EMBEDDING_DIM", "768", "EMBEDDING_DIM"),
        ("EMBEDDING_DIM", "abc", "EMBEDDING_DIM"),
        ("EMBEDDING_PROVIDER", "openai", "EMBEDDING_PROVIDER"),
        ("EMBEDDING_MODEL", "BAAI/bge-m3", "EMBEDDING_MODEL"),
        ("LLM_PROVIDER", "kimi", "LLM_PROVIDER"),
        ("LLM_TIMEOUT_SECONDS", "soon", "LLM_TIMEOUT_SECONDS"),
        ("RAG_TOP_K", "0", "RAG_TOP_K"),
        ("RAG_TOP_K", "21", "RAG_TOP_K"),
        ("RAG_TOP_K", "five", "RAG_TOP_K"),
        ("RAG_MIN_SIMILARITY", "high", "RAG_MIN_SIMILARITY"),
        ("RAG_CONTEXT_TOKEN_BUDGET", "1.5", "RAG_CONTEXT_TOKEN_BUDGET"),
        ("RAG_FALLBACK_ENABLED", "maybe", "RAG_FALLBACK_ENABLED"),
        ("EMBEDDING_DEVICE", "tpu", "EMBEDDING_DEVICE"),
        ("LLM_TIMEOUT_SECONDS", "nan", "LLM_TIMEOUT_SECONDS"),
        ("LLM_TIMEOUT_SECONDS", "0", "LLM_TIMEOUT_SECONDS"),
        ("DATABASE_URL", "postgresql://u@localhost:abc/x", "DATABASE_URL"),
        ("TEST_DATABASE_URL", "mysql://u@localhost/x_test", "TEST_DATABASE_URL"),
        ("LLM_API_KEY", "sk-\u00e9t\u00e9", "LLM_API_KEY"),
    ],
)
def test_invalid_value_is_an_error_naming_the_variable(project, variable, value, fragment):
    with pytest.raises(ConfigError) as err:
        config_load(environ={variable: value}, start_dir=project)
    assert err.value.variable == variable
    assert fragment in err.value.message


def test_qwen_provider_requires_its_fixed_model(project: Path):
    with pytest.raises(ConfigError) as err:
        config_load(environ={"EMBEDDING_PROVIDER": "local-qwen3",
                             "EMBEDDING_MODEL": "fake-lexical-v1"}, start_dir=project)
    assert "Qwen/Qwen3-Embedding-0.6B" in err.value.message


def test_threshold_defaults_per_provider_and_explicit_value_wins(project: Path):
    fake = config_load(environ={}, start_dir=project)
    qwen = config_load(environ={"EMBEDDING_PROVIDER": "local-qwen3"}, start_dir=project)
    explicit = config_load(environ={"EMBEDDING_PROVIDER": "local-qwen3",
                                    "RAG_MIN_SIMILARITY": "0.5"}, start_dir=project)
    assert (fake.threshold, fake.threshold_origin) == (0.20, "fake default")
    assert (qwen.threshold, qwen.embedding_model) == (0.35, "Qwen/Qwen3-Embedding-0.6B")
    assert (explicit.threshold, explicit.threshold_origin) == (0.5, "explicit")


def test_explicit_threshold_from_dotenv_wins_too(project: Path):
    write_env(project, RAG_MIN_SIMILARITY="0.31")
    assert config_load(environ={}, start_dir=project).threshold == 0.31


def _rag_config(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "manage.py"), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


def _clean_env() -> dict[str, str]:
    import os

    keep = ("PATH", "HOME", "LANG", "SYSTEMROOT")
    return {k: v for k, v in os.environ.items() if k in keep}


def test_rag_config_never_prints_the_key_or_db_password(tmp_path: Path):
    env = _clean_env() | {"LLM_API_KEY": "sk-very-secret-value", "LLM_PROVIDER": "openai-compatible",
                          "DATABASE_URL": "postgresql://u:db-pass-123@localhost:5432/x"}
    env_file = tmp_path / "t.env"
    env_file.write_text("RAG_TOP_K=4\n")
    text = _rag_config("--env-file", str(env_file), "config", env=env, cwd=tmp_path)
    as_json = _rag_config("--env-file", str(env_file), "config", "--json", env=env, cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    for output in (text.stdout + text.stderr, as_json.stdout + as_json.stderr):
        assert "sk-very-secret-value" not in output
        assert "db-pass-123" not in output
    assert "LLM_API_KEY = <set>  (env)" in text.stdout
    assert "RAG_TOP_K = 4  (.env)" in text.stdout
    assert "resolved threshold = 0.20 (fake default)" in text.stdout
    payload = json.loads(as_json.stdout)
    assert payload["variables"]["LLM_API_KEY"] == {"value": "<set>", "source": "env"}
    assert payload["resolved_threshold"] == {"value": 0.2, "origin": "fake default"}


def test_rag_config_with_invalid_value_exits_2(tmp_path: Path):
    empty = tmp_path / "empty.env"
    empty.write_text("")
    result = _rag_config("--env-file", str(empty), "config",
                         env=_clean_env() | {"EMBEDDING_DIM": "384"}, cwd=tmp_path)
    assert result.returncode == 2
    assert "EMBEDDING_DIM" in result.stderr


def test_rag_config_shows_qwen_model_and_threshold_defaults(tmp_path: Path):
    env = _clean_env() | {"EMBEDDING_PROVIDER": "local-qwen3"}
    empty = tmp_path / "empty.env"
    empty.write_text("")
    result = _rag_config("--env-file", str(empty), "config", env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "EMBEDDING_MODEL = Qwen/Qwen3-Embedding-0.6B" in result.stdout
    assert "resolved threshold = 0.35 (local-qwen3 default)" in result.stdout


def test_invalid_key_error_does_not_echo_the_key(project: Path):
    with pytest.raises(ConfigError) as err:
        config_load(environ={"LLM_API_KEY": "sk-sécret"}, start_dir=project)
    assert "sécret" not in err.value.message


def test_unknown_command_is_bad_input(tmp_path: Path):
    result = _rag_config("no-such-command", env=_clean_env(), cwd=tmp_path)
    assert result.returncode == 2 and "unknown command" in result.stderr
