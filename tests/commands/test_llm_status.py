"""`rag llm status`: which provider answers, where its key comes from (never the key), and whether
its server answers, probed live; and the `rag` entry point running `llm use` then `llm status`."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.answering.stub_openai import StubOpenAI
from tests.commands.llm_support import KEY, EnvLoader, env_values
from tests.commands.support import rag
from tests.harness import ROOT


@pytest.fixture
def stub() -> Iterator[StubOpenAI]:
    with StubOpenAI(behaviour="auto", models=["qwen2.5:0.5b", "other"]) as server:
        yield server


def remote(url: str, **more: str) -> str:
    lines = {"LLM_PROVIDER": "openai-compatible", "LLM_BASE_URL": url,
             "LLM_MODEL": "qwen2.5:0.5b", **more}
    return "".join(f"{name}={value}\n" for name, value in lines.items())


def test_the_fake_is_local_and_not_probed(llm_env_file: EnvLoader):
    llm_env_file()
    code, out, _ = rag("llm", "status")
    assert code == 0
    assert out.splitlines() == ["provider: fake (runs in this process: local, no probe)",
                                "model: fake-local"]
    body = json.loads(rag("llm", "status", "--json")[1])
    assert body["provider"] == "fake" and body["key"] is None and body["outbound"] is None
    assert body["server"]["status"] == "local" and body["server"]["checked_at"] is None


def test_a_server_that_answers_is_up(llm_env_file: EnvLoader, stub: StubOpenAI,
                                     monkeypatch: pytest.MonkeyPatch):
    stub.required_key = KEY
    monkeypatch.setenv("MY_LLM_KEY", KEY)
    llm_env_file(remote(stub.base_url, LLM_API_KEY_ENV="MY_LLM_KEY"), MY_LLM_KEY=KEY)
    code, out, err = rag("llm", "status")
    assert code == 0, err
    assert KEY not in out + err
    assert out.splitlines()[:4] == ["provider: openai-compatible", f"url: {stub.base_url}",
                                    "model: qwen2.5:0.5b", "key: set, from $MY_LLM_KEY"]
    assert "server: up, models listed in" in out and "(2 served, qwen2.5:0.5b among them)" in out
    assert "stays on this machine" in out
    body = json.loads(rag("llm", "status", "--json")[1])
    assert body["key"] == {"set": True, "needed": True, "from": "$MY_LLM_KEY",
                           "source": "LLM_API_KEY_ENV"}
    assert body["server"]["status"] == "up" and body["server"]["error"] is None
    assert body["server"]["models_total"] == 2 and body["server"]["latency_ms"] >= 0
    # The list alone: a status costs no tokens.
    assert {(request.method, request.path) for request in stub.requests} == {
        ("GET", "/v1/models")}


def test_a_key_from_a_file_is_named_by_its_path(llm_env_file: EnvLoader, stub: StubOpenAI,
                                                tmp_path: Path):
    key = tmp_path / "llm.key"
    key.write_text(KEY)
    key.chmod(0o600)
    llm_env_file(remote(stub.base_url, LLM_API_KEY_FILE=str(key)))
    code, out, _ = rag("llm", "status")
    assert code == 0 and f"key: set, from the key file {key}" in out and KEY not in out


def test_a_variable_that_is_not_set_is_said_and_the_server_is_down(llm_env_file: EnvLoader,
                                                                  stub: StubOpenAI):
    llm_env_file(remote(stub.base_url, LLM_API_KEY_ENV="MY_LLM_KEY"))
    code, out, _ = rag("llm", "status")
    assert code == 4
    assert "key: not set: $MY_LLM_KEY (LLM_API_KEY_ENV) is not set here" in out
    assert "server: down [llm_config_missing]" in out and stub.requests == []


def test_a_keyless_local_server_says_none_is_needed(llm_env_file: EnvLoader, stub: StubOpenAI):
    llm_env_file(remote(stub.base_url, LLM_API_KEY_REQUIRED="false"))
    code, out, _ = rag("llm", "status")
    assert code == 0 and "key: not set (none needed: the server is on this machine)" in out


@pytest.mark.parametrize(("setup", "code"), [
    ({"models_behaviour": "status:401"}, "llm_auth_failed"),
    ({"models": ["other"]}, "llm_model_not_served"),
])
def test_a_server_that_fails_is_down_with_its_code(llm_env_file: EnvLoader, stub: StubOpenAI,
                                                   setup: dict, code: str):
    for name, value in setup.items():
        setattr(stub, name, value)
    llm_env_file(remote(stub.base_url, LLM_API_KEY=KEY))
    exit_code, out, _ = rag("llm", "status", "--json")
    body = json.loads(out)
    assert exit_code == 4 and body["server"]["status"] == "down"
    assert body["server"]["error"] == code and KEY not in out


def test_nothing_listening_is_down_unreachable(llm_env_file: EnvLoader):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    llm_env_file(remote(f"http://127.0.0.1:{port}/v1", LLM_API_KEY_REQUIRED="false"))
    code, out, _ = rag("llm", "status")
    assert code == 4 and "server: down [llm_unreachable]: nothing answers at" in out


def test_the_rag_command_switches_then_reports_without_ever_printing_the_key(
        stub: StubOpenAI, tmp_path: Path):
    stub.required_key = KEY
    env_file = tmp_path / ".env"
    env_file.write_text("# mine\nRAG_TOP_K=4\n")
    env = {name: value for name, value in os.environ.items()
           if name in ("PATH", "HOME", "LANG", "SYSTEMROOT", "PYTHONPATH")}
    env["MY_LLM_KEY"] = KEY

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(ROOT / "manage.py"), "--env-file",
                               str(env_file), "llm", *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=60)

    used = run("use", stub.base_url, "--model", "qwen2.5:0.5b", "--key-env", "MY_LLM_KEY")
    status = run("status", "--json")
    assert used.returncode == 0, used.stderr
    assert status.returncode == 0, status.stderr
    for output in (used.stdout, used.stderr, status.stdout, status.stderr,
                   env_file.read_text()):
        assert KEY not in output
    assert env_file.read_text().startswith("# mine\nRAG_TOP_K=4\n")
    assert env_values(env_file)["LLM_API_KEY_ENV"] == "MY_LLM_KEY"
    body = json.loads(status.stdout)
    assert body["provider"] == "openai-compatible" and body["model"] == "qwen2.5:0.5b"
    assert body["key"]["from"] == "$MY_LLM_KEY" and body["server"]["status"] == "up"


def test_the_extractive_answerer_is_local_and_named_by_its_version(llm_env_file: EnvLoader):
    from answering.extractive import EXTRACTIVE_MODEL

    llm_env_file("LLM_PROVIDER=extractive\n")
    code, out, _ = rag("llm", "status")
    assert code == 0
    assert out.splitlines() == ["provider: extractive (runs in this process: local, no probe)",
                                f"model: {EXTRACTIVE_MODEL}"]
