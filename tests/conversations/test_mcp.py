"""`rag mcp`: the MCP server driven by the SDK's own client over a real stdio subprocess, its
tools compared with the HTTP API's bodies for the same input, and its access rules."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from access.api_tokens import token_create, token_revoke
from access.models import Grant
from conversations.models import Conversation
from core.config import get_config
from knowledge.bases import kb_create, kb_get
from knowledge.ingest import IngestRequest, vault_ingest
from tests.api.leaks_fixtures import QUERY, QUESTION, notes_write, raw_check
from tests.conftest import cli_env
from tests.harness import ROOT

TOOLS = {"search", "ask", "list_knowledge_bases", "get_document", "get_chunk",
         "list_conversations", "get_conversation"}
OPERATOR_NOTICE = "serving as the local operator"


@pytest.fixture
def two_bases(clean_tables, tmp_path) -> dict[str, dict[str, set[int]]]:
    """`alpha` and `beta`, committed (the server is another process): slug -> the ids of its
    documents and chunks."""
    for slug in ("alpha", "beta"):
        folder = notes_write(tmp_path, slug)
        kb_create(slug=slug, sources=[str(folder)])
        vault_ingest(IngestRequest(vault_path=folder, prepare_workers=0), config=get_config())
    bases: dict[str, dict[str, set[int]]] = {"alpha": {}, "beta": {}}
    with connection.cursor() as cursor:
        cursor.execute("SELECT b.slug, c.id, c.document_id FROM chunks c "
                       "JOIN knowledge_bases b ON b.id = c.knowledge_base_id")
        for slug, chunk_id, document_id in cursor.fetchall():
            bases[slug].setdefault("chunks", set()).add(chunk_id)
            bases[slug].setdefault("documents", set()).add(document_id)
    return bases


@pytest.fixture
def alpha_token(two_bases) -> tuple[int, str]:
    """(id, secret) of a token narrowed to alpha, of a superuser who could read both bases."""
    get_user_model().objects.create_superuser(username="root", password="pw")
    issued = token_create(username="root", slugs=["alpha"])
    return issued.id, issued.secret


def server_env(**overrides: str) -> dict[str, str]:
    env = cli_env(**overrides)
    if "RAG_MCP_TOKEN" not in overrides:
        env.pop("RAG_MCP_TOKEN", None)  # the developer's shell must not scope these tests
    return env


def mcp_session(calls, *, errlog: Path, args: tuple[str, ...] = (),
                env: dict[str, str] | None = None) -> tuple[set[str], list]:
    """Start `manage.py mcp`, list its tools and make `calls` (name, arguments), each either a
    tuple or a callable run in a worker thread between calls; returns the tool names and the
    results. No database work happens on this thread while the event loop runs."""

    async def run():
        parameters = StdioServerParameters(command=sys.executable,
                                           args=[str(ROOT / "manage.py"), "mcp", *args],
                                           env=env or server_env(), cwd=str(ROOT))
        with open(errlog, "a", encoding="utf-8") as stderr:
            async with stdio_client(parameters, errlog=stderr) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    names = {tool.name for tool in (await session.list_tools()).tools}
                    results = []
                    for call in calls:
                        if callable(call):
                            await asyncio.to_thread(call)
                        else:
                            results.append(await session.call_tool(*call))
                    return names, results

    return asyncio.run(run())


def body_of(result) -> Any:
    """The JSON a successful tool call carries: text and structured content agree."""
    assert not result.is_error, result.content[0].text
    body = json.loads(result.content[0].text)
    structured = result.structured_content
    assert (structured == body if isinstance(body, dict) else structured == {"result": body})
    return untraced(body)


def untraced(body: Any) -> Any:
    """A body without its trace id (each call, by MCP or HTTP, is a trace of its own)."""
    if isinstance(body, dict) and "trace_id" in body:
        assert body["trace_id"]
        return {key: value for key, value in body.items() if key != "trace_id"}
    return body


def error_of(result) -> dict:
    """The unified error body of a failed tool call."""
    assert result.is_error
    body = json.loads(result.content[0].text)
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}
    return body["error"]


def without_timings(body: dict) -> dict:
    """A search body with explain, less the stage timings and the rerank's time (which differ
    from run to run)."""
    rerank = body["explain"]["rerank"]
    return {**body, "explain": {**body["explain"], "timings_ms": None,
                                "rerank": {**rerank, "seconds": None} if rerank else rerank}}


class _Response:
    """An HTTP response whose JSON comes without its trace id (see `untraced`)."""

    def __init__(self, response) -> None:
        self.response = response
        self.status_code = response.status_code

    def json(self) -> Any:
        return untraced(self.response.json())


def api(method: str, path: str, body: dict | None = None, *, secret: str | None = None):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {secret}"} if secret else {}
    client = Client(raise_request_exception=False)
    if method == "get":
        return _Response(client.get(path, **headers))
    return _Response(client.post(path, data=json.dumps(body), content_type="application/json",
                                 **headers))


FILTERS = {"frontmatter": {"no_document_has_this_field": 1}}


def test_it_serves_each_tool_with_the_http_apis_body(two_bases, tmp_path):
    document_id = min(two_bases["beta"]["documents"])
    calls = [("search", {"query": QUERY, "top_k": 6}),
             ("search", {"query": QUERY, "explain": True}),
             ("ask", {"question": QUESTION}),
             ("list_knowledge_bases", {}),
             ("get_document", {"id": document_id}),
             ("search", {"query": QUERY, "top_k": 6, "filters": FILTERS})]
    names, results = mcp_session(calls, errlog=tmp_path / "stderr.txt")
    assert names == TOOLS
    search, explained, answer, bases, document, filtered = (body_of(result)
                                                           for result in results)
    # The filters reach the search: no document has the field, so nothing comes back.
    assert filtered == api("post", "/search", {"query": QUERY, "top_k": 6,
                                                "filters": FILTERS}).json()
    assert filtered["results"] == []

    assert search == api("post", "/search", {"query": QUERY, "top_k": 6}).json()
    assert {hit["knowledge_base"] for hit in search["results"]} == {"alpha", "beta"}
    assert without_timings(explained) == without_timings(
        api("post", "/search", {"query": QUERY, "explain": True}).json())
    assert answer == api("post", "/ask", {"question": QUESTION}).json()
    assert answer["mode"] == "rag" and answer["citations"]
    assert bases == api("get", "/knowledge-bases").json()
    assert [base["slug"] for base in bases] == ["alpha", "beta", "default"]
    assert document == api("get", f"/documents/{document_id}").json()
    # The MCP server traced its searches and its answer, as the local operator.
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT operation, caller FROM traces WHERE channel = 'mcp' "
                       "ORDER BY created_at")
        assert cursor.fetchall() == [("search", "local operator"), ("search", "local operator"),
                                     ("ask", "local operator"), ("search", "local operator")]
    assert document["knowledge_base"] == "beta"


def test_get_chunk_returns_a_search_results_chunk_in_full(two_bases, tmp_path):
    with connection.cursor() as cursor:  # pages, as if the chunk came from a PDF
        cursor.execute("UPDATE chunks SET page_start = 3, page_end = 4 WHERE id = %s",
                       [min(two_bases["alpha"]["chunks"])])
    explained = api("post", "/search", {"query": QUERY, "top_k": 20, "explain": True}).json()
    rows = zip(explained["results"], explained["explain"]["results"], strict=True)
    hit, chunk_id = next((hit, row["chunk_id"]) for hit, row in rows
                         if row["chunk_id"] == min(two_bases["alpha"]["chunks"]))
    _, (chunk,) = mcp_session([("get_chunk", {"id": chunk_id})], errlog=tmp_path / "stderr.txt")
    assert body_of(chunk) == {
        "id": chunk_id, "knowledge_base": "alpha", "document_id": hit["document_id"],
        "chunk_index": hit["chunk_index"], "source": hit["source"],
        "heading_path": hit["heading_path"], "page_start": 3, "page_end": 4,
        "content": hit["content"]}
    assert hit["page_start"] == 3 and hit["page_end"] == 4


def test_a_token_for_one_base_never_sees_the_other_through_any_tool(two_bases, alpha_token,
                                                                    tmp_path):
    _, secret = alpha_token
    beta_document = min(two_bases["beta"]["documents"])
    beta_chunk = min(two_bases["beta"]["chunks"])
    calls = [("search", {"query": QUERY, "explain": True}),
             ("ask", {"question": QUESTION}),
             ("list_knowledge_bases", {}),
             ("get_document", {"id": beta_document}),
             ("get_chunk", {"id": beta_chunk}),
             ("search", {"query": QUERY, "knowledge_bases": ["beta"]}),
             ("ask", {"question": QUESTION, "knowledge_bases": ["beta"]}),
             ("search", {"query": QUERY, "knowledge_bases": ["gamma"]})]
    _, results = mcp_session(calls, errlog=tmp_path / "stderr.txt",
                             env=server_env(RAG_MCP_TOKEN=secret))
    # Nothing of beta unless the call named it (and then only the name, in not_found).
    for result in results[:5]:
        raw_check(result.model_dump_json(), {"alpha"})

    search, answer, bases = (body_of(result) for result in results[:3])
    assert without_timings(search) == without_timings(
        api("post", "/search", {"query": QUERY, "explain": True}, secret=secret).json())
    assert {hit["knowledge_base"] for hit in search["results"]} == {"alpha"}
    assert {row["chunk_id"] for row in search["explain"]["results"]} <= two_bases["alpha"]["chunks"]
    assert answer == api("post", "/ask", {"question": QUESTION}, secret=secret).json()
    assert {citation["knowledge_base"] for citation in answer["citations"]} == {"alpha"}
    assert [base["slug"] for base in bases] == ["alpha"]
    assert bases == api("get", "/knowledge-bases", secret=secret).json()

    document, chunk, search_beta, ask_beta, search_gamma = (error_of(r) for r in results[3:])
    assert document == api("get", f"/documents/{beta_document}", secret=secret).json()["error"]
    assert document["code"] == chunk["code"] == "not_found"
    assert chunk == {"code": "not_found", "message": f"chunk not found: {beta_chunk}",
                     "details": {"id": beta_chunk}}
    # A base it may not read is answered exactly like one that does not exist.
    assert search_beta == ask_beta == {**search_gamma, "message": "knowledge base not found: beta",
                                       "details": {"knowledge_base": "beta"}}
    assert search_beta == api("post", "/search", {"query": QUERY, "knowledge_bases": ["beta"]},
                              secret=secret).json()["error"]


def test_a_conversation_through_mcp_keeps_its_context_and_its_owner(two_bases, alpha_token,
                                                                    tmp_path):
    _, secret = alpha_token
    _, (first,) = mcp_session([("ask", {"question": QUESTION, "new_conversation": True})],
                              errlog=tmp_path / "stderr.txt", env=server_env(RAG_MCP_TOKEN=secret))
    first = body_of(first)
    conversation = first["conversation_id"]
    assert Conversation.objects.get().pk == conversation and first["condensation"] == "as_asked"
    calls = [("ask", {"question": "and who signs it off?", "conversation_id": conversation}),
             ("list_conversations", {}),
             ("get_conversation", {"id": conversation})]
    _, (follow_up, listed, thread) = mcp_session(calls, errlog=tmp_path / "stderr.txt",
                                                 env=server_env(RAG_MCP_TOKEN=secret))
    follow_up = body_of(follow_up)
    assert follow_up["condensation"] == "rule" and "release checklist" in (
        follow_up["standalone_query"])
    assert {citation["knowledge_base"] for citation in follow_up["citations"]} == {"alpha"}
    assert [item["id"] for item in body_of(listed)] == [conversation]
    messages = body_of(thread)["messages"]
    assert [message["role"] for message in messages] == ["user", "assistant"] * 2
    assert messages[3]["standalone_query"] == follow_up["standalone_query"]

    # The operator (no token) is another owner: the token's conversation is not found.
    _, (other, mine) = mcp_session([("get_conversation", {"id": conversation}),
                                    ("list_conversations", {})],
                                   errlog=tmp_path / "stderr.txt")
    assert error_of(other)["code"] == "not_found" and body_of(mine) == []


def test_it_refuses_a_token_revoked_while_it_serves(alpha_token, tmp_path):
    token_id, secret = alpha_token

    def revoke() -> None:
        token_revoke(token_id=token_id)
        connection.close()  # this worker thread's own connection

    _, (before, after) = mcp_session([("list_knowledge_bases", {}), revoke,
                                      ("list_knowledge_bases", {})],
                                     errlog=tmp_path / "stderr.txt", args=("--token", secret))
    assert [base["slug"] for base in body_of(before)] == ["alpha"]
    assert error_of(after)["code"] == "unauthorized"


def test_invalid_arguments_are_the_apis_invalid_request(two_bases, tmp_path):
    arguments = {"query": "   ", "top_k": 21}
    _, (result,) = mcp_session([("search", arguments)], errlog=tmp_path / "stderr.txt")
    error = error_of(result)
    assert error == api("post", "/search", arguments).json()["error"]
    assert error["code"] == "invalid_request"
    assert {problem["field"] for problem in error["details"]["errors"]} == {"query", "top_k"}


@pytest.mark.parametrize("how", ["option", "environment"])
def test_an_invalid_token_exits_2_before_serving(how, clean_tables):
    secret = "lr_not-a-token-anyone-issued"
    args = ["--token", secret] if how == "option" else []
    env = server_env(RAG_MCP_TOKEN=secret) if how == "environment" else server_env()
    # stdin is empty: a server that started anyway would read EOF and exit 0.
    done = subprocess.run([sys.executable, str(ROOT / "manage.py"), "mcp", *args], cwd=ROOT,
                          env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2
    assert done.stdout == ""
    assert "error [unauthorized]" in done.stderr and "RAG_MCP_TOKEN" in done.stderr
    assert secret not in done.stderr


def test_without_a_token_it_is_the_operator_and_says_so_once_on_stderr(two_bases, tmp_path):
    errlog = tmp_path / "stderr.txt"
    _, (bases,) = mcp_session([("list_knowledge_bases", {})], errlog=errlog)
    assert {base["role"] for base in body_of(bases)} == {"maintainer"}
    assert errlog.read_text(encoding="utf-8").count(OPERATOR_NOTICE) == 1


def raw_session(messages: list[dict], *, answers: int) -> tuple[list[dict], str, str, int]:
    """`manage.py mcp` fed `messages` as JSON lines on stdin (what the SDK's client would not
    send, too): (the first `answers` replies, the rest of stdout, stderr, the exit code). Read
    until those are answered: at end of input the server stops, and any call still running."""
    server = subprocess.Popen([sys.executable, str(ROOT / "manage.py"), "mcp"], cwd=ROOT,
                              env=server_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    watchdog = threading.Timer(60, server.kill)
    watchdog.start()
    try:
        server.stdin.write("".join(json.dumps(message) + "\n" for message in messages))
        server.stdin.flush()
        replies = []
        while len(replies) < answers and (line := server.stdout.readline()):
            replies.append(json.loads(line))
        rest, stderr = server.communicate()  # closes stdin: the server's end of input
    finally:
        watchdog.cancel()
    return replies, rest, stderr, server.returncode


def test_stdout_carries_nothing_but_protocol_messages(two_bases):
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "test", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "ask", "arguments": {"question": QUESTION}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "get_document", "arguments": {"id": 999999}}},
    ]
    replies, rest, stderr, returncode = raw_session(messages, answers=3)
    assert returncode == 0, stderr
    assert rest == ""
    assert sorted(reply["id"] for reply in replies) == [1, 2, 3]
    assert {reply["jsonrpc"] for reply in replies} == {"2.0"}
    assert OPERATOR_NOTICE in stderr
    # The server names its version, the installed package's.
    from importlib.metadata import version

    initialized = next(reply for reply in replies if reply["id"] == 1)
    assert initialized["result"]["serverInfo"] == {"name": "local-rag",
                                                   "version": version("local-rag")}


def test_a_lone_surrogate_in_a_tool_call_gets_an_error_naming_the_field(two_bases):
    # json.dumps writes a lone surrogate as the escape "\ud800": valid JSON, no Unicode text.
    # The SDK's parser refuses such a line, and used to leave the request without any reply.
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "test", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "search", "arguments": {"query": "export\ud800limits"}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "ask", "arguments": {
             "question": QUESTION, "filters": {"frontmatter": {"re\udc00gion": "west"}}}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
         "params": {"name": "search", "arguments": {"query": QUERY}}},
    ]
    answered, _, stderr, _ = raw_session(messages, answers=4)
    replies = {reply["id"]: reply for reply in answered}
    assert sorted(replies) == [1, 2, 3, 4], stderr
    for request_id, field in ((2, "arguments.query"),
                              (3, "a key of arguments.filters.frontmatter")):
        error = replies[request_id]["error"]
        assert error["code"] == -32602 and error["message"].startswith(
            f"{field} holds a lone UTF-16 surrogate")
        assert error["data"]["error"]["details"] == {"field": field, "reason": "lone_surrogate"}
    # The server goes on answering.
    assert not replies[4]["result"]["isError"] and replies[4]["result"]["structuredContent"]


def test_explain_through_the_search_tool_is_a_researchers_like_on_the_api(two_bases, tmp_path):
    users = get_user_model().objects
    for username, role in (("rita", Grant.READER), ("rae", Grant.RESEARCHER)):
        user = users.create_user(username=username, password="pw")
        Grant.objects.create(user=user, knowledge_base_id=kb_get("alpha").id, role=role)
    reader = token_create(username="rita").secret
    calls = [("search", {"query": QUERY, "explain": True}), ("search", {"query": QUERY})]
    _, (refused, plain) = mcp_session(calls, errlog=tmp_path / "stderr.txt",
                                      env=server_env(RAG_MCP_TOKEN=reader))
    error = error_of(refused)
    assert error["code"] == "forbidden" and error["details"]["knowledge_bases"] == ["alpha"]
    assert error == api("post", "/search", {"query": QUERY, "explain": True},
                        secret=reader).json()["error"]
    assert "explain" not in body_of(plain) and body_of(plain)["results"]
    researcher = token_create(username="rae").secret
    _, (explained,) = mcp_session(calls[:1], errlog=tmp_path / "stderr.txt",
                                  env=server_env(RAG_MCP_TOKEN=researcher))
    assert {row["chunk_id"] for row in body_of(explained)["explain"]["results"]} <= (
        two_bases["alpha"]["chunks"])
