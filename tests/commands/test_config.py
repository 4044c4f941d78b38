"""`rag config [--json]`, `rag config --create-env` and the `rag` entry point: what is shown, what
is never shown, what is written, exit codes."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

from tests.embeddings.test_local_status import _model_files
from tests.harness import ROOT


def _rag_config(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "manage.py"), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


def _clean_env() -> dict[str, str]:
    import os

    keep = ("PATH", "HOME", "LANG", "SYSTEMROOT")
    return {k: v for k, v in os.environ.items() if k in keep}


def test_rag_config_never_prints_the_key_or_db_password(tmp_path: Path):
    env = _clean_env() | {"LLM_API_KEY": "sk-very-secret-value",
                          "LLM_PROVIDER": "openai-compatible",
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
    assert "resolved rerank = none, fusion = convex (vector weight 0.25)" in text.stdout
    assert payload["resolved_retrieval"] == {"rerank": "none", "fusion": "convex",
                                             "fusion_vector_weight": 0.25}


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


def test_unknown_command_is_bad_input(tmp_path: Path):
    result = _rag_config("no-such-command", env=_clean_env(), cwd=tmp_path)
    assert result.returncode == 2 and "unknown command" in result.stderr


def test_rag_config_shows_the_native_dim(tmp_path, config_override):
    folder = _model_files(tmp_path / "model",
                          pooling={"embedding_dimension": 384, "pooling_mode": "mean"})
    lines = []
    for changes in ({}, {"embedding_provider": "sentence-transformers",
                         "embedding_model": str(folder)},
                    {"embedding_provider": "sentence-transformers",
                     "embedding_model": str(tmp_path / "gone")}):
        config_override(**changes)
        out = io.StringIO()
        call_command("config", stdout=out)
        lines.append(out.getvalue().splitlines()[-1])
    assert lines == ["embedding native dim = 1024",
                     "embedding native dim = 384 (zero-padded to 1024)",
                     "embedding native dim = unknown (model not found)"]


def test_installed_rag_script_works_from_any_folder(tmp_path: Path):
    # The console script does not run from the checkout: every package must be installed.
    rag = Path(sys.executable).with_name("rag")
    empty = tmp_path / "empty.env"
    empty.write_text("")
    result = subprocess.run([str(rag), "--env-file", str(empty), "config", "--json"], cwd=tmp_path,
                            env=_clean_env(), capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["variables"]["EMBEDDING_PROVIDER"]["value"] == "fake"


def _project(tmp_path: Path) -> Path:
    """A project folder of its own: the checkout's pyproject.toml and .env.sample."""
    for name in ("pyproject.toml", ".env.sample"):
        (tmp_path / name).write_bytes((ROOT / name).read_bytes())
    return tmp_path


def test_create_env_makes_a_first_env_from_the_sample(tmp_path: Path):
    project = _project(tmp_path)
    result = _rag_config("config", "--create-env", "LLM_PROVIDER=extractive", env=_clean_env(),
                         cwd=project)
    assert result.returncode == 0, result.stderr
    env_file = project / ".env"
    assert f"created {env_file} from .env.sample with LLM_PROVIDER=extractive" in result.stdout
    assert env_file.stat().st_mode & 0o777 == 0o600
    sample = (project / ".env.sample").read_text()
    assert "\nLLM_PROVIDER=fake\n" in sample
    assert env_file.read_text() == sample.replace("\nLLM_PROVIDER=fake\n",
                                                  "\nLLM_PROVIDER=extractive\n")
    shown = _rag_config("config", "--json", env=_clean_env(), cwd=project)
    assert json.loads(shown.stdout)["variables"]["LLM_PROVIDER"] == {"value": "extractive",
                                                                     "source": ".env"}


def test_create_env_leaves_an_existing_env_as_it_is(tmp_path: Path):
    project = _project(tmp_path)
    env_file = project / ".env"
    env_file.write_text("LLM_PROVIDER=fake\nRAG_TOP_K=4\n")
    env_file.chmod(0o640)
    result = _rag_config("config", "--create-env", "LLM_PROVIDER=extractive", env=_clean_env(),
                         cwd=project)
    assert result.returncode == 0, result.stderr
    assert f"{env_file} exists; left as it is" in result.stdout
    assert env_file.read_text() == "LLM_PROVIDER=fake\nRAG_TOP_K=4\n"
    assert env_file.stat().st_mode & 0o777 == 0o640


@pytest.mark.parametrize(("assignment", "named"), [("NOT_A_SETTING=1", "NOT_A_SETTING"),
                                                   ("LLM_PROVIDER=bogus", "LLM_PROVIDER"),
                                                   ("LLM_PROVIDER", "NAME=VALUE")])
def test_create_env_refuses_what_no_setting_takes(tmp_path: Path, assignment: str, named: str):
    project = _project(tmp_path)
    result = _rag_config("config", "--create-env", assignment, env=_clean_env(), cwd=project)
    assert result.returncode == 2 and named in result.stderr
    assert not (project / ".env").exists()


def test_make_demo_makes_its_env_with_the_extractive_answerer_first():
    recipe = (ROOT / "Makefile").read_text().split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    steps = [line.strip() for line in recipe.splitlines()[1:]]
    assert steps[0] == "$(RAG) config --create-env LLM_PROVIDER=extractive"
    assert steps[1] == "$(RAG) pg start"
    assert not any(".env.sample" in step for step in steps)
