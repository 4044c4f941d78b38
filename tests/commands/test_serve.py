"""`rag serve` over a real socket: CLI ingest, gunicorn, HTTP and CLI search/ask agree."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import pytest

from ops.embedded_pg import free_port
from tests.answering.stub_openai import StubOpenAI
from tests.conftest import cli_env
from tests.harness import ROOT

QUESTION = "客户 P1 工单应该怎么升级？"


class Server:
    """`rag serve` in a subprocess, on a free loopback port. Its output goes to a file, not a
    pipe: nobody reads a pipe while the server runs, and one that fills up (~64 KB of logs)
    would block every thread that logs."""

    def __init__(self, env: dict[str, str], *, cwd: Path = ROOT) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            [sys.executable, str(ROOT / "manage.py"), "serve", "--port", str(self.port),
             "--workers", "1", "--threads", "4"],
            cwd=cwd, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                httpx.get(f"{self.url}/openapi.json", timeout=1)
                return
            except httpx.TransportError:
                if self.process.poll() is not None:
                    break
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"server did not start: {self.output()}")

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def serve():
    servers = []

    def start(**overrides: str) -> Server:
        server = Server(cli_env(**overrides))
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def test_ingest_search_and_ask_over_http_and_cli(clean_tables, serve, run_cli):
    not_ready = run_cli("search", QUESTION)
    assert not_ready.returncode == 3 and "retrieval_not_ready" in not_ready.stderr

    ingest = run_cli("ingest", "samples/acme-vault", "--json")
    assert ingest.returncode == 0, ingest.stderr
    summary = json.loads(ingest.stdout)
    assert summary["status"] == "success" and summary["documents_added"] == 9

    server = serve()
    health = httpx.get(f"{server.url}/health", timeout=10).json()
    assert health["checks"]["retrieval_ready"] == "ok"
    assert health["details"]["chunks"] == summary["chunks_written"]

    http_search = httpx.post(f"{server.url}/search", json={"query": QUESTION, "top_k": 3},
                             timeout=10)
    cli_search = run_cli("search", QUESTION, "--top-k", "3", "--json")
    assert http_search.status_code == 200 and cli_search.returncode == 0
    cli_body, http_body = json.loads(cli_search.stdout), http_search.json()
    # Each is a trace of its own: the same body but for the trace id.
    assert cli_body.pop("trace_id") != http_body.pop("trace_id")
    assert cli_body == http_body
    assert http_search.json()["results"][0]["source"] == "policies/Support Escalation Policy.md"

    http_ask = httpx.post(f"{server.url}/ask", json={"question": QUESTION}, timeout=10)
    cli_ask = run_cli("ask", QUESTION, "--json")
    cli_answer, http_answer = json.loads(cli_ask.stdout), http_ask.json()
    assert cli_answer.pop("trace_id") != http_answer.pop("trace_id")
    assert cli_answer == http_answer
    assert http_ask.json()["mode"] == "rag"

    human = run_cli("ask", QUESTION)
    assert "mode: rag" in human.stdout
    assert "[1] policies/Support Escalation Policy.md › " in human.stdout

    with httpx.stream("POST", f"{server.url}/ask/stream", json={"question": QUESTION},
                      timeout=10) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        body = "".join(response.iter_text())
    deltas = [json.loads(line[6:])["text"] for line in body.splitlines()
              if line.startswith("data: ") and '"text"' in line]
    assert "".join(deltas) == http_ask.json()["answer"]

    assert run_cli("ask", QUESTION, "--top-k", "0").returncode == 2
    assert run_cli("eval", "--json").returncode == 0


def test_gunicorn_streams_deltas_as_they_are_generated(clean_tables, serve, run_cli):
    assert run_cli("ingest", "samples/acme-vault").returncode == 0
    with StubOpenAI(behaviour="sse_hang", deltas=["first ", "second [1]"], hang_seconds=3) as stub:
        server = serve(LLM_PROVIDER="openai-compatible", LLM_BASE_URL=stub.base_url,
                       LLM_MODEL="m", LLM_API_KEY="k", LLM_TIMEOUT_SECONDS="20")
        started = time.monotonic()
        arrivals = {}
        with httpx.stream("POST", f"{server.url}/ask/stream", json={"question": QUESTION},
                          timeout=30) as response:
            for line in response.iter_lines():
                if line.startswith("event: ") and line[7:] not in arrivals:
                    arrivals[line[7:]] = time.monotonic() - started
    # The first delta reached the client while the model was still "thinking" (3 s pause).
    assert arrivals["delta"] + 1.5 < arrivals["done"]


def test_server_starts_without_a_database_and_reports_it(serve, run_cli):
    dead = f"postgresql://nobody@127.0.0.1:{free_port()}/local_rag"
    server = serve(DATABASE_URL=dead)
    health = httpx.get(f"{server.url}/health", timeout=15)
    assert health.status_code == 503
    assert health.json()["error"]["code"] == "database_unavailable"
    search = httpx.post(f"{server.url}/search", json={"query": "x"}, timeout=15)
    assert search.status_code == 503 and search.json()["error"]["code"] == "database_unavailable"
    # The client learns what to do, not where the database is or who connects to it.
    port = dead.rsplit(":", 1)[1].split("/")[0]
    for body in (health.text, search.text):
        assert port not in body and "nobody" not in body and "127.0.0.1" not in body
    cli = run_cli("search", "x", env=cli_env(DATABASE_URL=dead))
    assert cli.returncode == 3 and "database_unavailable" in cli.stderr




def test_refused_bodies_leave_the_keep_alive_connection_usable(serve):
    server = serve()
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=15)
    try:
        too_large = json.dumps({"question": "x" * (2 * 1024 * 1024)})
        connection.request("POST", "/ask", body=too_large,
                           headers={"Content-Type": "application/json"})
        first = connection.getresponse()
        assert first.status == 413 and json.loads(first.read())["error"]["code"] == (
            "payload_too_large")
        connection.request("POST", "/search", body="query=" + "x" * 300_000,
                           headers={"Content-Type": "application/x-www-form-urlencoded"})
        second = connection.getresponse()
        assert second.status == 415 and json.loads(second.read())["error"]["code"] == (
            "unsupported_media_type")
        connection.request("GET", "/openapi.json")
        third = connection.getresponse()
        assert third.status == 200 and json.loads(third.read())["info"]["title"] == "local-rag"
    finally:
        connection.close()


def test_serving_beyond_loopback_without_a_token_is_refused(run_cli):
    result = run_cli("serve", "--host", "0.0.0.0", "--port", str(free_port()),
                     env=cli_env(RAG_API_TOKEN=""))
    assert result.returncode == 2
    assert "RAG_API_TOKEN" in result.stderr and "--trusted-network" in result.stderr


def test_search_explain_on_the_command_line(clean_tables, run_cli):
    assert run_cli("ingest", "samples/acme-vault").returncode == 0
    shown = run_cli("search", "read_cache_enabled", "--explain",
                    env=cli_env(RAG_RETRIEVAL="hybrid", RAG_RERANK="features"))
    assert shown.returncode == 0, shown.stderr
    assert "mode hybrid" in shown.stdout and "rerank features: applied" in shown.stdout
    assert "API Latency Runbook.md" in shown.stdout.splitlines()[1]
    as_json = json.loads(run_cli("search", "read_cache_enabled", "--json", "--explain",
                                 env=cli_env(RAG_RETRIEVAL="hybrid")).stdout)
    assert as_json["explain"]["mode"] == "hybrid"
    assert as_json["explain"]["results"][0]["lexical_rank"] == 1


def test_the_workbench_over_gunicorn(clean_tables, serve, run_cli):
    """Sign in, ask (streamed) and load the page's own script and htmx from `rag serve`."""
    import re

    from django.contrib.auth import get_user_model

    from access.models import Grant
    from knowledge.bases import kb_get

    assert run_cli("ingest", "samples/acme-vault").returncode == 0
    from django.contrib.auth.hashers import PBKDF2PasswordHasher

    # The server hashes with the real settings' hashers, not the test suite's fast MD5 one.
    hashed = PBKDF2PasswordHasher().encode("a long serve password", "servetestsalt")
    user = get_user_model().objects.create(username="wb", password=hashed)
    Grant.objects.create(user=user, knowledge_base_id=kb_get("default").id, role=Grant.READER)
    server = serve()
    with httpx.Client(base_url=server.url, timeout=10) as client:
        login = client.get("/workbench/login/")
        assert login.status_code == 200
        assert "script-src 'self'" in login.headers["content-security-policy"]
        for script in re.findall(r'<script src="([^"]+)"', login.text):
            assert client.get(script).status_code == 200, script
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text).group(1)
        signed_in = client.post("/workbench/login/", data={
            "username": "wb", "password": "a long serve password",
            "csrfmiddlewaretoken": token}, headers={"Referer": f"{server.url}/workbench/login/"})
        assert signed_in.status_code == 302 and signed_in.headers["location"] == "/workbench/ask/"
        page = client.get("/workbench/ask/")
        assert page.status_code == 200
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        with client.stream("POST", "/workbench/ask/stream", data={"question": QUESTION},
                           headers={"X-CSRFToken": token,
                                    "Referer": f"{server.url}/workbench/ask/"}) as response:
            assert response.status_code == 200 and response.headers["x-request-id"]
            body = "".join(response.iter_text())
    assert "event: delta" in body and '"look": "answer"' in body
