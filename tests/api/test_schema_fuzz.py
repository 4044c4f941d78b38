"""Schemathesis over every operation of both OpenAPI documents the server serves (/openapi.json
and /v1/openapi.json): whatever it sends, valid or not, the answer is never a 5xx, and every 4xx
carries the error body of its API (the unified one; OpenAI's under /v1/).

The requests go through Django's whole WSGI stack (middleware, the NinjaAPI and its exception
handlers), in process, on the sample vault plus an uploaded document and a conversation, with
real API tokens. Most examples aim at a base, document, job, conversation, message or model that
exists and get text no well-behaved client sends put into their strings, so the fuzzed values
reach the services behind the 404s and 422s. The fake embedder and the fake LLM are forced
(tests/harness.py): /ask, the streams and /v1/chat/completions answer at once; uploads, deletes
and reindexes only queue jobs (no worker runs them). Derandomized, with a bounded number of
examples per operation: the same cases on every run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from urllib.parse import urlsplit

import pytest
import schemathesis
from django.contrib.auth import get_user_model
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error

from access.api_tokens import token_create
from access.callers import caller_for_secret
from conversations import services as conversations
from conversations.openai_errors import OPENAI_PREFIX
from core.text_input import lone_surrogate_field
from evaluation import research
from jobs.workers import worker_seen
from knowledge import documents
from localrag_site.api import api
from localrag_site.openai_api import openai_api
from tests.api.http import error_of

EXAMPLES_PER_OPERATION = 40

CONFIG = schemathesis.Config.from_dict({
    "seed": 22,
    "generation": {"max-examples": EXAMPLES_PER_OPERATION, "deterministic": True,
                   "database": "none"},
})
APP = WSGIHandler()
MAIN = schemathesis.openapi.from_dict(api.get_openapi_schema(), config=CONFIG)
MAIN.app = APP
OPENAI = schemathesis.openapi.from_dict(openai_api.get_openapi_schema(), config=CONFIG)
OPENAI.app = APP
# The fixtures build the world once per operation; every example of it then uses that world.
FUZZ_SETTINGS = settings(suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                HealthCheck.too_slow])


@dataclass(frozen=True)
class World:
    """What exists, by the names of the parameters and body fields that name it: the sample
    vault's base, one of its documents and an uploaded one, the upload's job, a conversation of
    the first token with one answered question, the models of /v1 and chats it answers; and the
    secrets of a token that may do everything and of a read-only token narrowed to the base."""

    values: dict[str, tuple]
    tokens: tuple[str, ...]


@pytest.fixture
def world(sample_index, config_override, tmp_path) -> World:
    from django.db import connection

    config = config_override(project_root=tmp_path)
    worker_seen(owner="fuzz:1/jobs-1")  # what /health/ready waits for
    get_user_model().objects.create_superuser(username="root", password="pw")
    root = token_create(username="root")
    reader = token_create(username="root", slugs=["default"], read_only=True)
    caller = caller_for_secret(root.secret, config=config)
    assert caller is not None
    upload = documents.document_upload(caller=caller, slug="default", filename="note.txt",
                                       chunks=[b"An uploaded note about export limits."],
                                       config=config)
    with connection.cursor() as cursor:
        cursor.execute("SELECT min(id) FROM documents WHERE id <> %s", [upload.document_id])
        vault_document = cursor.fetchone()[0]
    conversation = conversations.conversation_create(caller=caller, title="Export limits")
    turn = conversations.turn_answer(conversations.turn_prepare(
        caller=caller, conversation_id=conversation.pk, question="What are the export limits?",
        top_k=None, fallback=False, on_llm_error="error", config=config), config=config)
    question_set = research.set_create(
        caller=caller, slug="default", name="fuzz", given=research.QuestionsGiven(
            yaml="questions:\n  - {id: q1, question: 'export limits?', expected_mode: rag}\n"))
    run = research.run_start(caller=caller, request=research.RunStart(
        question_set=question_set.pk))
    return World(values={"slug": ("default",),
                         "knowledge_bases": (["default"],),
                         "document_id": (vault_document, upload.document_id),
                         "job_id": (upload.job_id,),
                         "conversation_id": (conversation.pk,),
                         "set_id": (question_set.pk,), "question_set": (question_set.pk,),
                         "run_id": (run.pk,),
                         "message_id": (turn.message_id, turn.question_message_id),
                         "model": ("local-rag", "kb:default"),
                         "messages": ([{"role": "user", "content": "What are the export limits?"}],
                                      [{"role": "system", "content": "Be brief."},
                                       {"role": "user", "content": "And the row limit?"}])},
                 tokens=(root.secret, reader.secret))


@pytest.fixture
def in_test_transaction():
    """Requests share the test's connection and transaction, as with Django's test client: the
    handler must not close that connection when a request starts or ends."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def error_body_of_its_api(ctx, response, case) -> None:
    """A 4xx answers with the error body of the API its URL reached: OpenAI's under /v1/, the
    unified one anywhere else (a path that ../ took out of /v1/ included)."""
    if not 400 <= response.status_code < 500:
        return
    body = json.loads(response.content)
    if urlsplit(response.request.url).path.startswith(OPENAI_PREFIX):
        openai_error_body(body)
    else:
        unified_error_body(body)


def unified_error_body(body: dict) -> None:
    """{"error": {"code", "message", "details"}}."""
    assert set(body) == {"error"}, f"not the unified error body: {body}"
    error = body["error"]
    assert set(error) == {"code", "message", "details"}, f"not the unified error body: {body}"
    assert isinstance(error["code"], str) and error["code"]
    assert isinstance(error["message"], str) and error["message"]
    assert isinstance(error["details"], dict)


def openai_error_body(body: dict) -> None:
    """OpenAI's {"error": {"message", "type", "param", "code"}}."""
    assert set(body) == {"error"}, f"not OpenAI's error body: {body}"
    error = body["error"]
    assert set(error) == {"message", "type", "param", "code"}, f"not OpenAI's error body: {body}"
    assert isinstance(error["message"], str) and error["message"]
    assert isinstance(error["type"], str) and error["type"]
    assert error["param"] is None or isinstance(error["param"], str)
    assert isinstance(error["code"], str) and error["code"]


# Schemathesis names every uploaded file after its field ("file"), so the names get a test of
# their own: any text, to past the 1,024 bytes Django allows a part's headers, with or without
# a suffix that may be uploaded.
UPLOAD_STEMS = st.one_of(st.text(max_size=40), st.builds(
    lambda piece, times: piece * times, st.text(min_size=1, max_size=8), st.integers(30, 400)))
UPLOAD_NAMES = st.builds(lambda stem, suffix: stem + suffix, UPLOAD_STEMS,
                         st.sampled_from(["", ".txt", ".md", ".pdf", ".docx", ".TXT", ".exe"]))
UPLOAD_CONTENTS = st.one_of(st.just(b"A note about export limits.\n"), st.binary(max_size=512))
BOUNDARY = "fuzz-boundary-22"


def multipart_of(name: str, content: bytes) -> bytes:
    """One `file` part named `name`, written by hand so that nothing quotes or cuts the name."""
    return (f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n").encode() + content + (
            f"\r\n--{BOUNDARY}--\r\n").encode()


# Text no well-behaved client sends, put into the generated strings now and then: a NUL, terminal
# escapes and other C0/C1 controls, a bidi override, a line break, a name past every limit.
NASTY_TEXT = st.sampled_from(["\x00", "a\x00b", "\x1b[2J", "\x07\x08\x7f", "\x85\x9b",
                              "\u202e", "\r\n", " ", "%00", "../" * 8, "x" * 5000])
# In bodies also lone UTF-16 surrogates, in values and in object keys: JSON carries them as
# "\ud800" escapes, which decode into no Unicode text (a URL cannot carry them at all).
NASTY_BODY_TEXT = st.one_of(NASTY_TEXT, st.sampled_from(["\ud800", "a\udfffb", "\udc00\ud800"]))
# And numbers past the 64-bit integers of the database, either way.
NASTY_NUMBERS = st.sampled_from([10**30, 2**63, -(2**63) - 1, 2**31])


def nastier(value, data, *, body: bool = False):
    """`value` with one in four of its strings replaced by or run into NASTY_TEXT (NASTY_BODY_TEXT
    in a body, where one in four object keys get it too), and one in four of its integers
    replaced by NASTY_NUMBERS."""
    if isinstance(value, str) and not often(data, "plain text"):
        nasty = data.draw(NASTY_BODY_TEXT if body else NASTY_TEXT, label="which")
        return data.draw(st.sampled_from([nasty, value + nasty, nasty + value]), label="where")
    if isinstance(value, int) and not isinstance(value, bool) and not often(data, "plain int"):
        return data.draw(NASTY_NUMBERS, label="number")
    if isinstance(value, list):
        return [nastier(item, data, body=body) for item in value]
    if isinstance(value, dict):
        return {(key if not body or often(data, "plain key") else
                 key + data.draw(NASTY_BODY_TEXT, label="key")): nastier(item, data, body=body)
                for key, item in value.items()}
    return value


def often(data, label: str) -> bool:
    """True three times in four (Hypothesis favours the first of the choices)."""
    return data.draw(st.sampled_from([True, True, True, False]), label=label)


def existing(values: dict, world: World, data) -> dict:
    """`values` with the names of things that exist, mostly, where World knows some."""
    return {name: data.draw(st.sampled_from(world.values[name]), label=name)
            if name in world.values and often(data, f"existing {name}") else value
            for name, value in values.items()}


def fuzz_call(case, data, world: World) -> None:
    """Send the case, after aiming it at what exists and making it nastier, with one of the
    world's tokens; no 5xx, and any 4xx in its API's error body."""
    if case.path_parameters:
        case.path_parameters = existing(case.path_parameters, world, data)
        if not often(data, "plain path"):
            case.path_parameters = nastier(case.path_parameters, data)
    if isinstance(case.body, dict):
        case.body = existing(case.body, world, data)
        if often(data, "nastier body"):
            case.body = nastier(case.body, data, body=True)
            if lone_surrogate_field(case.body) is not None:
                # As JSON text: Schemathesis cannot check such a body against the schema.
                case.body = json.dumps(case.body).encode()
    if case.query and often(data, "nastier query"):
        case.query = nastier(case.query, data)
    token = world.tokens[0] if often(data, "token that may do everything") else world.tokens[1]
    case.call_and_validate(headers={"Authorization": f"Bearer {token}"},
                           checks=[not_a_server_error, error_body_of_its_api])


@MAIN.parametrize()
@MAIN.given(data=st.data())
@FUZZ_SETTINGS
def test_no_input_is_a_server_error(case, data, world, in_test_transaction):
    fuzz_call(case, data, world)


@OPENAI.parametrize()
@OPENAI.given(data=st.data())
@FUZZ_SETTINGS
def test_no_input_to_the_openai_endpoints_is_a_server_error(case, data, world,
                                                            in_test_transaction):
    fuzz_call(case, data, world)


@given(name=UPLOAD_NAMES, content=UPLOAD_CONTENTS)
@settings(FUZZ_SETTINGS, max_examples=EXAMPLES_PER_OPERATION, derandomize=True, database=None)
def test_no_upload_name_is_a_server_error(client, world, name, content):
    response = client.post("/knowledge-bases/default/documents",
                           multipart_of(name, content),
                           content_type=f"multipart/form-data; boundary={BOUNDARY}",
                           HTTP_AUTHORIZATION=f"Bearer {world.tokens[0]}")
    assert response.status_code < 500, response.content
    if response.status_code >= 400:
        error_of(response)
