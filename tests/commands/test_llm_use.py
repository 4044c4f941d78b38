"""`rag llm use URL|PRESET`: the probe against the local stub server, what is written into `.env`
(only references to the key; every other line kept), and nothing written when the probe fails."""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from answering.llm import llm_config_check
from core.config import config_use
from ops.llm_presets import PRESETS_BY_NAME, llm_target_resolve
from tests.answering.stub_openai import StubOpenAI
from tests.commands.llm_support import (
    ENV_TEXT,
    KEY,
    EnvLoader,
    config_read,
    env_values,
)
from tests.commands.support import rag

# `rag llm use` records what it wrote in the audit log.
pytestmark = pytest.mark.django_db


@pytest.fixture
def stub() -> Iterator[StubOpenAI]:
    with StubOpenAI(behaviour="auto", models=["qwen2.5:0.5b"]) as server:
        yield server


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def assert_no_key(*texts: str) -> None:
    for text in texts:
        assert KEY not in text


def key_file(folder: Path, *, mode: int = 0o600, name: str = "llm.key") -> Path:
    path = folder / name
    path.write_text(KEY + "\n")
    path.chmod(mode)
    return path


def test_a_local_server_is_written_and_every_other_line_kept(llm_env_file: EnvLoader,
                                                            stub: StubOpenAI):
    path = llm_env_file()
    code, out, err = rag("llm", "use", stub.base_url)
    assert code == 0, err
    lines = path.read_text().splitlines()
    # The lines that were there stay, in their order; the new ones come after.
    assert lines[:7] == ["# My installation: keep this comment.", "RAG_TOP_K=4",
                         "LLM_PROVIDER=openai-compatible", "# the model of the fake",
                         "LLM_MODEL=qwen2.5:0.5b", "LLM_API_KEY=", "RAG_TRACE_TEXT=true"]
    assert lines[7:] == [f"LLM_BASE_URL={stub.base_url}", "LLM_API_KEY_REQUIRED=false"]
    assert path.stat().st_mode & 0o777 == 0o600
    assert "models: 1 served in" in out and "model: qwen2.5:0.5b" in out
    assert "completion: ok in" in out and "streaming: ok, 3 pieces" in out
    assert "key: none (LLM_API_KEY_REQUIRED=false" in out
    assert "stays on this machine" in out
    assert f"wrote LLM_PROVIDER, LLM_BASE_URL, LLM_MODEL, LLM_API_KEY_REQUIRED to {path}" in out
    config = config_read(path)
    llm_config_check(config=config)  # the written configuration is one that answers
    assert (config.llm_provider, config.llm_base_url, config.llm_model) == (
        "openai-compatible", stub.base_url, "qwen2.5:0.5b")
    # Models, a completion of a few tokens, a stream of a few tokens: nothing else.
    assert [(r.method, r.path, r.body.get("stream"), r.body.get("max_tokens"))
            for r in stub.requests] == [("GET", "/v1/models", None, None),
                                        ("POST", "/v1/chat/completions", False, 8),
                                        ("POST", "/v1/chat/completions", True, 8)]


def test_running_it_again_writes_nothing(llm_env_file: EnvLoader, stub: StubOpenAI):
    path = llm_env_file()
    assert rag("llm", "use", stub.base_url)[0] == 0
    llm_env_file(None)
    before = path.read_text()
    code, out, _ = rag("llm", "use", stub.base_url)
    assert code == 0 and "already says so: nothing to write" in out
    assert path.read_text() == before


@pytest.mark.parametrize("preset", ["ollama", "llamacpp", "vllm", "lmstudio"])
def test_each_local_preset_works_against_its_server(llm_env_file: EnvLoader, stub: StubOpenAI,
                                                   preset: str):
    path = llm_env_file()
    code, out, err = rag("llm", "use", preset, "--url", stub.base_url)
    assert code == 0, err
    assert f"server: {stub.base_url} ({preset} preset)" in out
    assert env_values(path)["LLM_BASE_URL"] == stub.base_url
    assert env_values(path)["LLM_API_KEY_REQUIRED"] == "false"


def test_the_presets_listen_where_their_servers_do():
    assert {name: llm_target_resolve(target=name).base_url for name in PRESETS_BY_NAME} == {
        "ollama": "http://127.0.0.1:11434/v1", "llamacpp": "http://127.0.0.1:8080/v1",
        "vllm": "http://127.0.0.1:8000/v1", "lmstudio": "http://127.0.0.1:1234/v1",
        "openai": "https://api.openai.com/v1"}
    assert llm_target_resolve(target="OLLAMA", url="http://gpu:11434/v1/").base_url == (
        "http://gpu:11434/v1")


@pytest.mark.parametrize(("args", "says"), [
    (["llama"], "neither a URL"),
    (["ftp://host/v1"], "must be http(s)://"),
    (["http://127.0.0.1:1/v1", "--url", "http://x/v1"], "--url goes with a preset"),
])
def test_a_target_that_is_no_server_is_bad_input(llm_env_file: EnvLoader, args: list[str],
                                                  says: str):
    path = llm_env_file()
    code, _, err = rag("llm", "use", *args)
    assert code == 2 and says in err and path.read_text() == ENV_TEXT


def test_the_cloud_preset_reads_its_key_from_its_variable_and_says_what_leaves(
        llm_env_file: EnvLoader, stub: StubOpenAI, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    stub.required_key = KEY
    stub.models = ["gpt-4o-mini", "gpt-4o"]
    # 127.0.0.1 counts as outside this machine, as api.openai.com does.
    path = llm_env_file(RAG_OUTBOUND_LOCAL_HOSTS="localhost")
    code, out, err = rag("llm", "use", "openai", "--url", stub.base_url, "--model",
                         "gpt-4o-mini")
    assert code == 0, err
    assert_no_key(path.read_text(), out, err, caplog.text)
    values = env_values(path)
    assert values["LLM_API_KEY_ENV"] == "OPENAI_API_KEY" and values["LLM_API_KEY"] == ""
    assert "LLM_API_KEY_REQUIRED" not in values
    assert "key: from $OPENAI_API_KEY; .env names the variable" in out
    assert "127.0.0.1 is outside this machine" in out and "local-only" in out
    assert all(r.headers.get("authorization") == f"Bearer {KEY}" for r in stub.requests)
    config = config_read(path, OPENAI_API_KEY=KEY, RAG_OUTBOUND_LOCAL_HOSTS="localhost")
    assert config.llm_api_key == KEY and config.sources["LLM_API_KEY"] == "LLM_API_KEY_ENV"
    llm_config_check(config=config)


def test_the_cloud_preset_without_its_variable_is_refused_before_any_request(
        llm_env_file: EnvLoader, stub: StubOpenAI, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    path = llm_env_file(RAG_OUTBOUND_LOCAL_HOSTS="localhost")
    code, _, err = rag("llm", "use", "openai", "--url", stub.base_url, "--model", "m")
    assert code == 2 and "reads the key from $OPENAI_API_KEY, which is not set" in err
    assert stub.requests == [] and path.read_text() == ENV_TEXT


def test_a_server_outside_without_a_key_is_refused_before_any_request(llm_env_file: EnvLoader,
                                                                      stub: StubOpenAI):
    path = llm_env_file(RAG_OUTBOUND_LOCAL_HOSTS="localhost")
    for extra in ([], ["--no-key"]):
        code, _, err = rag("llm", "use", stub.base_url, *extra)
        assert code == 2 and "is outside this machine, so it needs a key" in err
    assert stub.requests == [] and path.read_text() == ENV_TEXT


def test_a_key_file_is_written_as_its_path_only(llm_env_file: EnvLoader, stub: StubOpenAI,
                                                tmp_path: Path):
    folder = tmp_path / "my keys"
    folder.mkdir()
    key = key_file(folder)
    stub.required_key = KEY
    path = llm_env_file()
    code, out, err = rag("llm", "use", stub.base_url, "--key-file", str(key))
    assert code == 0, err
    assert_no_key(path.read_text(), out, err)
    # A path with a space is quoted, so that the file reads back as it was written.
    assert f"LLM_API_KEY_FILE='{key}'" in path.read_text().splitlines()
    config = config_read(path)
    assert config.llm_api_key == KEY and config.llm_api_key_file == str(key)


def test_a_key_file_others_may_read_is_refused_and_nothing_sent(llm_env_file: EnvLoader,
                                                                stub: StubOpenAI,
                                                                tmp_path: Path):
    key = key_file(tmp_path, mode=0o644)
    path = llm_env_file()
    code, out, err = rag("llm", "use", stub.base_url, "--key-file", str(key))
    assert code == 2 and "error [invalid_config]" in err and "chmod 600" in err
    assert_no_key(out, err)
    assert stub.requests == [] and path.read_text() == ENV_TEXT


def test_a_key_in_env_file_is_replaced_by_the_reference(llm_env_file: EnvLoader, stub: StubOpenAI,
                                                        monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("MY_LLM_KEY", KEY)
    path = llm_env_file(ENV_TEXT.replace("LLM_API_KEY=\n", f"LLM_API_KEY={KEY}\n"))
    code, out, err = rag("llm", "use", stub.base_url, "--key-env", "MY_LLM_KEY")
    assert code == 0, err
    assert_no_key(path.read_text(), out, err)
    assert "LLM_API_KEY=" in path.read_text().splitlines()
    assert "LLM_API_KEY" in out.split("wrote ", 1)[1]


def test_a_key_set_up_for_another_server_is_not_sent_to_a_new_one(llm_env_file: EnvLoader,
                                                                  stub: StubOpenAI):
    path = llm_env_file(ENV_TEXT.replace("LLM_API_KEY=\n", f"LLM_API_KEY={KEY}\n"))
    code, out, err = rag("llm", "use", stub.base_url)
    assert code == 2 and ".env sets LLM_API_KEY for another server" in err
    assert "--no-key" in err
    assert_no_key(out, err)
    assert stub.requests == [] and KEY in path.read_text()


def test_the_same_server_keeps_its_key(llm_env_file: EnvLoader, stub: StubOpenAI):
    stub.required_key = KEY
    text = (f"LLM_PROVIDER=openai-compatible\nLLM_BASE_URL={stub.base_url}\nLLM_MODEL=old\n"
            f"LLM_API_KEY={KEY}\n")
    path = llm_env_file(text)
    code, out, err = rag("llm", "use", stub.base_url, "--model", "qwen2.5:0.5b")
    assert code == 0, err
    assert_no_key(out, err)
    assert "key: from LLM_API_KEY, as set up for this server" in out
    assert path.read_text() == text.replace("LLM_MODEL=old", "LLM_MODEL=qwen2.5:0.5b")


def test_no_key_empties_a_key_in_env_file(llm_env_file: EnvLoader, stub: StubOpenAI):
    path = llm_env_file(ENV_TEXT.replace("LLM_API_KEY=\n", f"LLM_API_KEY={KEY}\n"))
    code, out, err = rag("llm", "use", stub.base_url, "--no-key")
    assert code == 0, err
    assert KEY not in path.read_text() and "authorization" not in stub.requests[0].headers


def test_a_key_exported_in_the_environment_is_used_and_not_contradicted(
        llm_env_file: EnvLoader, stub: StubOpenAI, monkeypatch: pytest.MonkeyPatch):
    stub.required_key = KEY
    monkeypatch.setenv("OTHER_KEY", "sk-other")
    path = llm_env_file(LLM_API_KEY=KEY)
    code, _, err = rag("llm", "use", stub.base_url, "--key-env", "OTHER_KEY")
    assert code == 2 and "LLM_API_KEY is set in this environment and would override" in err
    code, out, err = rag("llm", "use", stub.base_url, "--key-env", "LLM_API_KEY")
    assert code == 0, err
    assert_no_key(path.read_text(), out, err)
    assert "key: from LLM_API_KEY in this environment; .env holds none" in out


@pytest.mark.parametrize(("setup", "code", "says"), [
    ({"models_behaviour": "html"}, "llm_not_json", "not JSON (a web page?)"),
    ({"models_behaviour": "status:500"}, "llm_upstream_error", "HTTP 500"),
    ({"required_key": "a-key-not-sent"}, "llm_auth_failed", "wants a key (HTTP 401)"),
    ({"models": []}, "llm_no_models", "serves no model yet"),
    ({"behaviour": "json"}, "llm_stream_broken", "streaming does not work"),
    ({"behaviour": "missing_choices"}, "llm_bad_response", "not an OpenAI-compatible answer"),
    ({"models_owner": "local-rag"}, "llm_bad_response", "local-rag's own"),
    ({"models_behaviour": "hang"}, "llm_timeout", "within 0.5s"),
])
def test_a_failed_probe_writes_nothing(llm_env_file: EnvLoader, stub: StubOpenAI, setup: dict,
                                       code: str, says: str):
    for name, value in setup.items():
        setattr(stub, name, value)
    path = llm_env_file()
    before = path.stat().st_mtime_ns
    exit_code, out, err = rag("llm", "use", stub.base_url, "--timeout", "0.5")
    assert exit_code == 4 and f"error [{code}]: " in err and says in err
    assert path.read_text() == ENV_TEXT and path.stat().st_mtime_ns == before
    assert "wrote" not in out


def test_a_preset_with_no_model_says_how_to_get_one(llm_env_file: EnvLoader, stub: StubOpenAI):
    stub.models = []
    llm_env_file()
    code, _, err = rag("llm", "use", "ollama", "--url", stub.base_url)
    assert code == 4 and "serves no model yet: pull one first, e.g. `ollama pull" in err


@pytest.mark.parametrize(("url", "code", "says"), [
    ("{free}", "llm_unreachable", "nothing answers at"),
    ("{stub_root}", "llm_not_found", "try {stub_root}/v1"),
])
def test_a_wrong_address_is_named(llm_env_file: EnvLoader, stub: StubOpenAI, url: str, code: str,
                                  says: str):
    names = {"free": f"http://127.0.0.1:{free_port()}/v1",
             "stub_root": stub.base_url.removesuffix("/v1")}
    path = llm_env_file()
    exit_code, _, err = rag("llm", "use", url.format(**names))
    assert exit_code == 4 and f"error [{code}]" in err and says.format(**names) in err
    assert path.read_text() == ENV_TEXT


def test_several_models_and_none_named_lists_the_choices(llm_env_file: EnvLoader,
                                                         stub: StubOpenAI):
    stub.models = ["a-model", "b-model"]
    path = llm_env_file()
    code, _, err = rag("llm", "use", stub.base_url)
    assert code == 2 and "serves 2 models; name one with --model: a-model, b-model" in err
    code, _, err = rag("llm", "use", stub.base_url, "--model", "c-model")
    assert code == 4 and "does not serve 'c-model'; it serves a-model, b-model" in err
    assert path.read_text() == ENV_TEXT


def test_dry_run_probes_and_writes_nothing(llm_env_file: EnvLoader, stub: StubOpenAI):
    path = llm_env_file()
    code, out, err = rag("llm", "use", stub.base_url, "--dry-run")
    assert code == 0, err
    assert "streaming: ok" in out and "dry run: nothing written" in out
    assert len(stub.requests) == 3 and path.read_text() == ENV_TEXT


def test_force_writes_what_a_failed_probe_named(llm_env_file: EnvLoader):
    path = llm_env_file()
    url = f"http://127.0.0.1:{free_port()}/v1"
    code, _, err = rag("llm", "use", url, "--force")
    assert code == 2 and "--force needs --model" in err and path.read_text() == ENV_TEXT
    code, out, err = rag("llm", "use", url, "--force", "--model", "later-model")
    assert code == 0, err
    assert "warning: the probe failed (llm_unreachable" in out and "written anyway" in out
    assert env_values(path)["LLM_MODEL"] == "later-model"


def test_json_says_everything_but_the_key(llm_env_file: EnvLoader, stub: StubOpenAI,
                                          monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("MY_LLM_KEY", KEY)
    stub.required_key = KEY
    path = llm_env_file()
    code, out, err = rag("llm", "use", stub.base_url, "--key-env", "MY_LLM_KEY", "--json")
    assert code == 0, err
    assert_no_key(out, err)
    body = json.loads(out)
    assert body["ok"] is True and body["written"] is True and body["env_file"] == str(path)
    assert body["settings_written"] == ["LLM_PROVIDER", "LLM_BASE_URL", "LLM_MODEL",
                                        "LLM_API_KEY_ENV"]
    assert body["key"] == {"source": "variable", "from": "$MY_LLM_KEY", "sent": True}
    assert body["models"]["ids"] == ["qwen2.5:0.5b"] and body["error"] is None
    assert body["stream"]["deltas"] == 3 and body["outbound"] == {"local": True,
                                                                "host": "127.0.0.1"}


def test_json_of_a_failure_names_its_code(llm_env_file: EnvLoader, stub: StubOpenAI):
    stub.models_behaviour = "status:503"
    llm_env_file()
    code, out, _ = rag("llm", "use", stub.base_url, "--json")
    body = json.loads(out)
    assert code == 4 and body["ok"] is False and body["written"] is False
    assert body["error"]["code"] == "llm_upstream_error" and body["error"]["status"] == 503


def test_a_setting_from_the_environment_is_said_to_outrank_env_file(llm_env_file: EnvLoader,
                                                                    stub: StubOpenAI):
    llm_env_file(LLM_PROVIDER="fake")
    code, out, err = rag("llm", "use", stub.base_url)
    assert code == 0, err
    assert ("warning: LLM_PROVIDER is set in this environment (fake), which outranks .env"
            in out)


def test_the_sample_file_is_never_written(llm_env_file: EnvLoader, stub: StubOpenAI,
                                          tmp_path: Path):
    llm_env_file()  # restores the test run's configuration afterwards
    sample = tmp_path / ".env.sample"
    sample.write_text(ENV_TEXT)
    config_use(config_read(sample))
    code, _, err = rag("llm", "use", stub.base_url)
    assert code == 2 and "a template" in err and sample.read_text() == ENV_TEXT


def test_what_it_writes_is_one_audit_entry_without_any_key(llm_env_file: EnvLoader,
                                                           stub: StubOpenAI, tmp_path: Path):
    from tests.audit.conftest import entries

    path = llm_env_file()
    earlier = entries()
    code, _, err = rag("llm", "use", stub.base_url, "--key-file",
                       str(key_file(tmp_path)))
    assert code == 0, err
    (entry,) = [entry for entry in entries() if entry not in earlier]
    assert entry["action"] == "settings.update"
    assert (entry["source"], entry["object_type"], entry["object_name"]) == (
        "cli", "env_file", str(path.resolve()))
    assert entry["actor"].startswith("cli:")
    written = entry["changes"]["settings"]
    assert written["LLM_MODEL"] == "qwen2.5:0.5b" and written["LLM_BASE_URL"] == stub.base_url
    assert written["LLM_API_KEY_FILE"] == str(tmp_path / "llm.key")
    assert_no_key(json.dumps(entries(), default=str))
