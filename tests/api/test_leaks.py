"""No caller ever receives anything of a knowledge base it may not read: not its content, its
document names or paths, its slug, its counts, nor its document or chunk ids — on /search
(every retrieval mode and rerank, explain, HNSW), /ask, /ask/stream, /health, /me,
/knowledge-bases (listed, created, changed, deleted, and a base's documents), /documents (and a
document's text) and /jobs, and through every way a credential can be missing, wrong or revoked.

The bases, users and tokens are built once per class (tests/api/leaks_fixtures.py) inside a
transaction that is rolled back afterwards; each test runs in a savepoint of it. Every check that
a scoped caller sees one base has a twin showing that an unscoped caller, with the same request,
sees both, so none of them passes because the other base simply never matched.
"""

from __future__ import annotations

import json

import httpx
import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection, transaction

from access.api_tokens import token_revoke
from core.config import get_config
from index.vector_index import vector_index_build, vector_index_drop
from tests.api.http import error_of
from tests.api.leaks_fixtures import (
    BETA_ONLY_QUESTION,
    BOTH_BASES,
    ONE_BASE,
    QUERY,
    QUESTION,
    READS,
    TOPIC_QUERY,
    ask_parts,
    body_of,
    drained,
    explain_check,
    hits_check,
    raw_check,
    readable_of,
    send,
    slugs_seen,
    text_of,
    world_build,
)
from tests.commands.test_serve import Server
from tests.conftest import cli_env

ENV_TOKEN = "env-operator-token-5b1e"
MODES = ["vector", "lexical", "hybrid"]
RERANKS = ["none", "features"]
ENDPOINTS = ["/search", "/ask", "/ask/stream"]
# As long as "beta": once the slug is swapped, the two 404 bodies must be equal byte for byte.
UNKNOWN_SLUG = "gama"


@pytest.fixture(scope="class")
def world(django_db_setup, django_db_blocker, tmp_path_factory):
    """Both bases, their HNSW index, users, grants and tokens; rolled back after the class."""
    with django_db_blocker.unblock(), transaction.atomic():
        built = world_build(tmp_path_factory.mktemp("leaks"))
        vector_index_build(config=get_config())
        yield built
        transaction.set_rollback(True)


@pytest.mark.usefixtures("db")
class TestScoping:
    """In-process (the Django test client, from loopback), with access control on."""

    @pytest.fixture
    def configure(self, config_override):
        """config_override with RAG_API_TOKEN set (each call starts again from the defaults)."""

        def apply(**changes):
            return config_override(rag_api_token=ENV_TOKEN, **changes)

        apply()
        return apply

    @pytest.fixture
    def as_token(self, world, configure):
        """The Authorization header of a token name; "env" is RAG_API_TOKEN."""

        def header(token: str) -> str:
            return f"Bearer {ENV_TOKEN}" if token == "env" else world.bearer(token)

        return header

    @pytest.mark.parametrize("rerank", RERANKS)
    @pytest.mark.parametrize("mode", MODES)
    @pytest.mark.parametrize("token", ONE_BASE)
    def test_search_returns_only_the_callers_base(self, client, world, as_token,
                                                  configure, token, mode, rerank):
        configure(rag_retrieval=mode, rag_rerank=rerank)
        response = send(client, "/search", {"query": QUERY, "top_k": 20, "explain": True},
                        as_token(token))
        assert response.status_code == 200
        body = json.loads(response.content)
        readable = READS[token]
        assert body["results"], "the caller's own base matches the query"
        assert slugs_seen(response.content.decode()) == readable
        hits_check(world, body["results"], readable)
        explain_check(world, body["explain"], readable)
        assert body["explain"]["mode"] == mode
        raw_check(response.content.decode(), readable)

    @pytest.mark.parametrize("rerank", RERANKS)
    @pytest.mark.parametrize("mode", MODES)
    @pytest.mark.parametrize("token", [*BOTH_BASES, "env"])
    def test_the_same_search_by_a_caller_of_both_bases_sees_both(
            self, client, world, as_token, configure, token, mode, rerank):
        configure(rag_retrieval=mode, rag_rerank=rerank)
        response = send(client, "/search", {"query": QUERY, "top_k": 20, "explain": True},
                        as_token(token))
        body = json.loads(response.content)
        assert {result["knowledge_base"] for result in body["results"]} == {"alpha", "beta"}
        assert slugs_seen(response.content.decode()) == {"alpha", "beta"}
        explained = {entry["chunk_id"] for entry in body["explain"]["results"]}
        assert explained & world.chunk_ids["alpha"] and explained & world.chunk_ids["beta"]

    @pytest.mark.parametrize("mode", MODES)
    def test_searching_for_the_other_bases_marker_finds_none_of_it(
            self, client, world, as_token, configure, mode):
        configure(rag_retrieval=mode)
        body = {"query": "quokkalith BETA-4409", "top_k": 20, "explain": True}
        ana = send(client, "/search", body, as_token("ana"))
        assert ana.status_code == 200
        hits_check(world, json.loads(ana.content)["results"], {"alpha"})
        raw_check(ana.content.decode(), {"alpha"})
        if mode == "lexical":  # no term of the query is in alpha at all
            assert json.loads(ana.content)["results"] == []
        root = json.loads(send(client, "/search", body, as_token("root")).content)
        assert root["results"][0]["knowledge_base"] == "beta"

    def test_scores_do_not_depend_on_the_other_base(self, client, world, as_token,
                                                    configure):
        """BM25's corpus statistics, fusion and rerank are computed over the caller's bases
        only: with beta gone, alpha's reader gets the same results, scores and ranks."""
        configure(rag_retrieval="hybrid", rag_rerank="features")
        body = {"query": QUERY, "top_k": 20, "explain": True}

        def answer() -> dict:
            found = json.loads(send(client, "/search", body, as_token("ana")).content)
            found["explain"].pop("timings_ms")
            found["explain"]["rerank"].pop("seconds")
            found.pop("trace_id")  # a new trace per request
            return found

        before = answer()
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM documents WHERE knowledge_base_id = %s",
                           [world.base_ids["beta"]])
            assert cursor.rowcount == len(world.document_ids["beta"])
        assert answer() == before
        assert [entry["bm25"] for entry in before["explain"]["results"]
                if entry["bm25"] is not None], "the lexical channel took part"

    def test_hnsw_gives_top_k_of_a_small_base_under_a_ten_times_larger_one(
            self, client, world, as_token, configure):
        configure(rag_retrieval="vector", rag_vector_index="hnsw", hnsw_ef_search=10)
        body = {"query": TOPIC_QUERY, "top_k": 5, "explain": True}
        root = json.loads(send(client, "/search", body, as_token("root")).content)
        assert root["explain"]["parameters"]["vector_index"] == "hnsw"
        # The nearest chunks overall are beta's: the index must look past them for alpha's.
        assert [result["knowledge_base"] for result in root["results"]] == ["beta"] * 5

        response = send(client, "/search", body, as_token("ana"))
        found = json.loads(response.content)
        assert found["explain"]["parameters"]["vector_index"] == "hnsw"
        assert len(found["results"]) == 5
        hits_check(world, found["results"], {"alpha"})
        explain_check(world, found["explain"], {"alpha"})
        raw_check(response.content.decode(), {"alpha"})
        assert all(result["source"].startswith("zephyrine/release-")
                   for result in found["results"][:3])
        # As good as the exact scan of alpha: the same scores (the last two tie, so which of
        # the tied chunks come back may differ).
        configure(rag_retrieval="vector", rag_vector_index="exact")
        exact = json.loads(send(client, "/search", body, as_token("ana")).content)
        assert exact["explain"]["parameters"]["vector_index"] == "exact"
        assert [result["score"] for result in found["results"]] == pytest.approx(
            [result["score"] for result in exact["results"]])

    @pytest.mark.parametrize("path", ["/ask", "/ask/stream"])
    @pytest.mark.parametrize("token", ONE_BASE)
    def test_ask_cites_and_quotes_only_the_callers_base(self, client, world, as_token, path,
                                                        token):
        response = send(client, path, {"question": QUESTION, "top_k": 20}, as_token(token))
        text, body, answer = ask_parts(path, response)
        readable = READS[token]
        assert body["mode"] == "rag" and body["citations"]
        hits_check(world, body["citations"], readable)
        assert slugs_seen(answer) == readable  # the fake LLM quotes the cited chunks
        raw_check(text, readable)

    @pytest.mark.parametrize("path", ["/ask", "/ask/stream"])
    @pytest.mark.parametrize("token", [*BOTH_BASES, "env"])
    def test_the_same_question_by_a_caller_of_both_bases_cites_both(
            self, client, as_token, path, token):
        response = send(client, path, {"question": QUESTION, "top_k": 20}, as_token(token))
        text, body, _ = ask_parts(path, response)
        assert {citation["knowledge_base"] for citation in body["citations"]} == {"alpha",
                                                                                  "beta"}
        assert slugs_seen(text) == {"alpha", "beta"}

    @pytest.mark.parametrize("path", ["/ask", "/ask/stream"])
    def test_no_answer_names_only_the_callers_sources(self, client, world, as_token, path):
        response = send(client, path, {"question": BETA_ONLY_QUESTION}, as_token("ana"))
        text, body, answer = ask_parts(path, response)
        assert body["mode"] == "no_answer" and body["citations"] == []
        assert "zephyrine/" in answer  # "See also:" names alpha's closest notes
        raw_check(text, {"alpha"})
        root = send(client, path, {"question": BETA_ONLY_QUESTION}, as_token("root"))
        assert "beta" in {citation["knowledge_base"]
                          for citation in ask_parts(path, root)[1]["citations"]}

    @pytest.mark.parametrize("path", ENDPOINTS)
    @pytest.mark.parametrize("slugs", [["beta"], ["alpha", "beta"], ["default"]])
    def test_an_unreadable_base_is_not_found_exactly_like_an_unknown_one(
            self, client, world, as_token, path, slugs):
        denied = send(client, path, body_of(path, QUESTION, knowledge_bases=slugs),
                      as_token("ana"))
        unknown_slugs = [UNKNOWN_SLUG if slug != "alpha" else slug for slug in slugs]
        unknown = send(client, path, body_of(path, QUESTION, knowledge_bases=unknown_slugs),
                       as_token("ana"))
        assert denied.status_code == unknown.status_code == 404
        assert not denied.streaming and not unknown.streaming
        assert error_of(denied)["code"] == "not_found"
        hidden = next(slug for slug in slugs if slug != "alpha")
        assert error_of(denied)["details"] == {"knowledge_base": hidden}
        assert error_of(denied)["message"] == f"knowledge base not found: {hidden}"
        assert denied["Content-Type"] == unknown["Content-Type"]
        assert denied.content.replace(hidden.encode(), UNKNOWN_SLUG.encode()) == (
            unknown.content)
        raw_check(denied.content.decode().replace(hidden, ""), {"alpha"})

    @pytest.mark.parametrize("path", ENDPOINTS)
    def test_narrowing_to_a_readable_base_works(self, client, world, as_token, path):
        for token, slug in (("ana", "alpha"), ("root", "alpha"), ("root", "beta"),
                            ("cy", "beta")):
            response = send(client, path, body_of(path, QUESTION, top_k=20,
                                                  knowledge_bases=[slug]), as_token(token))
            if path == "/search":
                text = response.content.decode()
                hits = json.loads(text)["results"]
            else:
                text, body, _ = ask_parts(path, response)
                hits = body["citations"]
            assert response.status_code == 200 and hits
            hits_check(world, hits, {slug})
            raw_check(text, {slug})
            assert slugs_seen(text) == {slug}

    def test_health_without_credentials_counts_nothing(self, client, world):
        for authorization in (None, "Bearer lr_unknown-token", "Basic x", "Bearer"):
            headers = {} if authorization is None else {"HTTP_AUTHORIZATION": authorization}
            response = client.get("/health", **headers)
            assert response.status_code == 200
            details = json.loads(response.content)["details"]
            assert not {"documents", "chunks", "embeddings_current_config"} & set(details)
            raw_check(response.content.decode(), set())

    @pytest.mark.parametrize("token", [*READS, "env"])
    def test_health_counts_only_what_the_caller_reads(self, client, world, as_token, token):
        response = client.get("/health", HTTP_AUTHORIZATION=as_token(token))
        details = json.loads(response.content)["details"]
        readable = readable_of(token)
        chunks = sum(len(world.chunk_ids[slug]) for slug in readable)
        assert details["documents"] == sum(len(world.document_ids[slug]) for slug in readable)
        assert details["chunks"] == details["embeddings_current_config"] == chunks
        raw_check(response.content.decode(), set())

    @pytest.mark.parametrize("path", ENDPOINTS)
    @pytest.mark.parametrize("authorization", [
        None, "", "Bearer", "Bearer ", "garbage", "Bearer garbage", "Bearer lr_unknown-token",
        "Token {ana}", "Basic {ana}", "{ana}", "Bearer {ana}x", "Bearer {ana_short}",
        "Bearer  {ana}x", f"Bearer {ENV_TOKEN}"])
    def test_missing_malformed_or_unknown_credentials_are_401(self, client, world, path,
                                                              authorization):
        # Without RAG_API_TOKEN set, its value is just another unknown secret.
        if authorization is not None:
            authorization = authorization.format(ana=world.tokens["ana"],
                                                 ana_short=world.tokens["ana"][:-1])
        response = send(client, path, body_of(path, QUESTION), authorization)
        assert response.status_code == 401 and not response.streaming
        assert error_of(response)["code"] == "unauthorized"
        assert response["WWW-Authenticate"] == "Bearer"
        raw_check(response.content.decode(), set())
        assert world.tokens["ana"] not in response.content.decode()

    @pytest.mark.parametrize("path", ENDPOINTS)
    def test_a_revoked_token_is_refused_on_the_very_next_request(self, client, world, path):
        body = body_of(path, QUESTION)
        assert drained(send(client, path, body, world.bearer("ana"))).status_code == 200
        token_revoke(token_id=world.token_ids["ana"])
        refused = send(client, path, body, world.bearer("ana"))
        assert refused.status_code == 401 and error_of(refused)["code"] == "unauthorized"
        raw_check(refused.content.decode(), set())
        health = json.loads(client.get("/health", HTTP_AUTHORIZATION=world.bearer("ana")).content)
        assert "documents" not in health["details"]
        # Her read-only token is another token: still valid.
        assert drained(send(client, path, body,
                            world.bearer("ana_read_only"))).status_code == 200

    @pytest.mark.parametrize("path", ENDPOINTS)
    def test_the_token_of_a_deactivated_user_is_refused(self, client, world, path):
        get_user_model().objects.filter(username="ana").update(is_active=False)
        response = send(client, path, body_of(path, QUESTION), world.bearer("ana"))
        assert response.status_code == 401 and error_of(response)["code"] == "unauthorized"

    @pytest.mark.parametrize("path", ENDPOINTS)
    @pytest.mark.parametrize("token", ["bo_alpha", "nobody"])
    def test_a_token_that_reads_no_base_gets_nothing(self, client, world, path, token):
        response = send(client, path, body_of(path, QUESTION, top_k=20), world.bearer(token))
        if response.status_code == 200:  # nothing found in no base
            if path == "/search":
                text = text_of(response)
                assert json.loads(text)["results"] == []
            else:
                text, body, _ = ask_parts(path, response)
                assert body["mode"] == "no_answer" and body["citations"] == []
        else:  # nothing to search
            text = text_of(response)
            assert response.status_code == 503
            assert error_of(response)["code"] == "retrieval_not_ready"
        raw_check(text, set())
        narrowed = send(client, path, body_of(path, QUESTION, knowledge_bases=["alpha"]),
                        world.bearer(token))
        assert narrowed.status_code == 404 and error_of(narrowed)["code"] == "not_found"

    # The knowledge-base, document and job endpoints (knowledge/api.py).

    @pytest.mark.parametrize("token", [*READS, "env"])
    def test_knowledge_bases_lists_only_what_the_caller_reads(self, client, world, as_token,
                                                              token):
        response = client.get("/knowledge-bases", HTTP_AUTHORIZATION=as_token(token))
        assert response.status_code == 200
        listed = {base["slug"]: base for base in json.loads(response.content)}
        readable = readable_of(token)
        everything = token in ("root", "env")
        assert set(listed) == readable | ({"default"} if everything else set())
        for slug in readable:
            assert listed[slug]["documents"] == len(world.document_ids[slug])
            assert listed[slug]["chunks"] == len(world.chunk_ids[slug])
        raw_check(response.content.decode(), readable)

    @pytest.mark.parametrize(("method", "suffix"), [("get", ""), ("get", "/content"),
                                                    ("delete", ""), ("post", "/reindex")])
    def test_another_bases_document_is_not_found_like_a_missing_one(self, client, world,
                                                                     method, suffix):
        def call(document_id: int, token: str):
            kwargs = {"data": b"", "content_type": ""} if method == "post" else {}
            return getattr(client, method)(f"/documents/{document_id}{suffix}",
                                           HTTP_AUTHORIZATION=world.bearer(token), **kwargs)

        missing_id = max(world.document_ids["beta"]) + 1000
        missing = call(missing_id, "ana")
        assert missing.status_code == 404 and error_of(missing)["code"] == "not_found"
        for document_id in sorted(world.document_ids["beta"])[:3]:
            hidden = call(document_id, "ana")
            assert hidden.status_code == 404
            assert error_of(hidden)["details"] == {"id": document_id}
            # The body names nothing but the id that was asked for.
            assert hidden.content.replace(str(document_id).encode(), b"N") == (
                missing.content.replace(str(missing_id).encode(), b"N"))
        shown = call(min(world.document_ids["alpha"]), "ana")
        if method == "get":
            assert json.loads(shown.content)["knowledge_base"] == "alpha"
            raw_check(shown.content.decode(), {"alpha"})
            if suffix == "/content":  # the text of alpha's note: its marker, nothing of beta's
                assert "zephyrine" in json.loads(shown.content)["content"]
        else:  # ana reads alpha, so she learns only that she may not change it
            assert shown.status_code == 403

    @pytest.mark.parametrize("token", [*READS, "env"])
    def test_me_names_only_the_bases_the_caller_reads(self, client, world, as_token, token):
        response = client.get("/me", HTTP_AUTHORIZATION=as_token(token))
        assert response.status_code == 200
        body = json.loads(response.content)
        readable = readable_of(token)
        everything = token in ("root", "env")
        assert {base["slug"] for base in body["knowledge_bases"]} == readable | (
            {"default"} if everything else set())
        assert body["admin"] is everything
        raw_check(response.content.decode(), readable)

    @pytest.mark.parametrize("token", [*READS, "env"])
    def test_a_bases_documents_are_listed_to_its_readers_only(self, client, world, as_token,
                                                               token):
        readable = readable_of(token)
        for slug in ("alpha", "beta"):
            response = client.get(f"/knowledge-bases/{slug}/documents?limit=200",
                                  HTTP_AUTHORIZATION=as_token(token))
            if slug in readable:
                assert response.status_code == 200
                body = json.loads(response.content)
                assert body["total"] == len(world.document_ids[slug])
                assert {document["id"] for document in body["documents"]} == (
                    world.document_ids[slug])
                raw_check(response.content.decode(), {slug})
                continue
            unknown = client.get(f"/knowledge-bases/{UNKNOWN_SLUG}/documents?limit=200",
                                 HTTP_AUTHORIZATION=as_token(token))
            assert response.status_code == unknown.status_code == 404
            assert response.content.replace(slug.encode(), UNKNOWN_SLUG.encode()) == (
                unknown.content)
            raw_check(response.content.decode().replace(slug, ""), readable)

    @pytest.mark.parametrize("method", ["patch", "delete"])
    def test_changing_a_base_the_caller_cannot_read_is_not_found_like_an_unknown_one(
            self, client, world, method):
        def call(slug: str, token: str):
            if method == "patch":
                return client.patch(f"/knowledge-bases/{slug}", json.dumps({"name": "Mine"}),
                                    content_type="application/json",
                                    HTTP_AUTHORIZATION=world.bearer(token))
            return client.delete(f"/knowledge-bases/{slug}",
                                 HTTP_AUTHORIZATION=world.bearer(token))

        for token in ("ana", "cy_alpha", "bo_alpha", "nobody"):
            hidden, unknown = call("beta", token), call(UNKNOWN_SLUG, token)
            assert hidden.status_code == unknown.status_code == 404
            assert hidden.content.replace(b"beta", UNKNOWN_SLUG.encode()) == unknown.content
        # Who reads beta learns only that it may not change it, maintainer or not.
        for token in ("bo", "mo", "cy"):
            refused = call("beta", token)
            assert refused.status_code == 403 and error_of(refused)["code"] == "forbidden"
            raw_check(refused.content.decode(), READS[token])
        listed = json.loads(client.get("/knowledge-bases",
                                       HTTP_AUTHORIZATION=world.bearer("root")).content)
        assert {base["slug"]: base["name"] for base in listed}["beta"] == "Quokkalith Archive"
        # An admin may (beta holds documents: it is not deleted, and says so).
        done = call("beta", "root")
        assert done.status_code == (200 if method == "patch" else 409)

    def test_creating_a_base_teaches_a_non_admin_nothing_of_the_others(self, client, world):
        def create(slug: str, token: str):
            return client.post("/knowledge-bases", json.dumps({"slug": slug}),
                               content_type="application/json",
                               HTTP_AUTHORIZATION=world.bearer(token))

        for token in ("ana", "mo", "cy", "cy_alpha", "nobody"):
            taken, free = create("beta", token), create(UNKNOWN_SLUG, token)
            assert taken.status_code == free.status_code == 403
            assert taken.content == free.content
        assert create("beta", "root").status_code == 409
        assert create(UNKNOWN_SLUG, "root").status_code == 201

    def test_another_bases_job_is_not_found_like_a_missing_one(self, client, world):
        document_id = min(world.document_ids["beta"])
        queued = client.post(f"/documents/{document_id}/reindex", data=b"", content_type="",
                             HTTP_AUTHORIZATION=world.bearer("root"))
        assert queued.status_code == 202, queued.content
        job_id = json.loads(queued.content)["job_id"]
        assert client.get(f"/jobs/{job_id}",
                          HTTP_AUTHORIZATION=world.bearer("bo")).status_code == 200
        hidden = client.get(f"/jobs/{job_id}", HTTP_AUTHORIZATION=world.bearer("ana"))
        missing = client.get(f"/jobs/{job_id + 1000}", HTTP_AUTHORIZATION=world.bearer("ana"))
        assert hidden.status_code == missing.status_code == 404
        assert error_of(hidden)["code"] == "not_found"
        assert hidden.content.replace(str(job_id).encode(), b"N") == (
            missing.content.replace(str(job_id + 1000).encode(), b"N"))

    def test_upload_to_another_base_is_not_found_like_an_unknown_one(
            self, client, world, config_override, tmp_path):
        config_override(project_root=tmp_path)

        def upload(slug: str):
            return client.post(f"/knowledge-bases/{slug}/documents",
                               {"file": SimpleUploadedFile("a.md", b"# A\n\nText.\n")},
                               HTTP_AUTHORIZATION=world.bearer("ana"))

        hidden, unknown = upload("beta"), upload(UNKNOWN_SLUG)
        assert hidden.status_code == unknown.status_code == 404
        assert hidden.content.replace(b"beta", UNKNOWN_SLUG.encode()) == unknown.content
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM documents")
            assert cursor.fetchone()[0] == sum(len(ids) for ids in world.document_ids.values())


def test_scoping_holds_over_a_real_socket(clean_tables, tmp_path):
    """`rag serve` (gunicorn, its own process and database connection) on committed data."""
    world = world_build(tmp_path, beta_scale=2)
    server = Server(cli_env())
    try:
        def post(path: str, body: dict, token: str | None) -> httpx.Response:
            headers = {"Authorization": world.bearer(token)} if token else {}
            return httpx.post(f"{server.url}{path}", json=body, headers=headers, timeout=15)

        health = httpx.get(f"{server.url}/health", timeout=15).json()
        assert not {"documents", "chunks", "embeddings_current_config"} & set(health["details"])
        ana_health = httpx.get(f"{server.url}/health", timeout=15,
                               headers={"Authorization": world.bearer("ana")}).json()
        assert ana_health["details"]["chunks"] == len(world.chunk_ids["alpha"])

        assert post("/search", {"query": QUERY}, None).status_code == 401
        search = post("/search", {"query": QUERY, "top_k": 20, "explain": True}, "ana")
        assert search.status_code == 200 and search.json()["results"]
        hits_check(world, search.json()["results"], {"alpha"})
        explain_check(world, search.json()["explain"], {"alpha"})
        raw_check(search.text, {"alpha"})
        assert slugs_seen(post("/search", {"query": QUERY, "top_k": 20}, "root").text) == {
            "alpha", "beta"}
        # explain is a researcher's: refused to a reader, and over a base only read.
        for token in ("rita", "rae"):
            refused = post("/search", {"query": QUERY, "explain": True}, token)
            assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden"
            assert "results" not in refused.json()
        rita = post("/search", {"query": QUERY, "top_k": 20}, "rita").json()
        assert rita["results"] and all("score" in hit for hit in rita["results"])

        with httpx.stream("POST", f"{server.url}/ask/stream", timeout=15,
                          json={"question": QUESTION, "top_k": 20},
                          headers={"Authorization": world.bearer("ana")}) as response:
            assert response.status_code == 200
            stream = "".join(response.iter_text())
        assert "event: citations" in stream and "zephyrine" in stream
        raw_check(stream, {"alpha"})

        denied = post("/ask/stream", {"question": QUESTION, "knowledge_bases": ["beta"]}, "ana")
        unknown = post("/ask/stream", {"question": QUESTION, "knowledge_bases": [UNKNOWN_SLUG]},
                       "ana")
        assert denied.status_code == unknown.status_code == 404
        assert denied.content.replace(b"beta", UNKNOWN_SLUG.encode()) == unknown.content

        token_revoke(token_id=world.token_ids["ana"])
        refused = post("/search", {"query": QUERY}, "ana")
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "unauthorized"
    finally:
        server.stop()


@pytest.fixture(scope="class")
def indexed_world(django_db_setup, django_db_blocker, tmp_path_factory):
    """The same bases and callers, committed, so that each base's search index is built from
    them (by the ingests themselves); emptied after the class."""
    from tests.conftest import DEFAULT_KB, RAG_TABLES

    with django_db_blocker.unblock():
        built = world_build(tmp_path_factory.mktemp("leaks-indexed"))
        vector_index_build(config=get_config())
        try:
            yield built
        finally:
            vector_index_drop(config=get_config(), every=True)
            get_user_model().objects.all().delete()
            with connection.cursor() as cursor:
                cursor.execute(f"TRUNCATE {RAG_TABLES} RESTART IDENTITY CASCADE")
                cursor.execute(DEFAULT_KB)


@pytest.mark.usefixtures("db")
class TestScopingThroughTheSearchIndex:
    """The search checks again, with every base's candidates from its own search index: a
    base's index never answers another base's query, and its statistics never touch it."""

    @pytest.fixture
    def world(self, indexed_world):
        return indexed_world

    configure = TestScoping.configure
    as_token = TestScoping.as_token
    test_search_returns_only_the_callers_base = \
        TestScoping.test_search_returns_only_the_callers_base
    test_the_same_search_by_a_caller_of_both_bases_sees_both = \
        TestScoping.test_the_same_search_by_a_caller_of_both_bases_sees_both
    test_searching_for_the_other_bases_marker_finds_none_of_it = \
        TestScoping.test_searching_for_the_other_bases_marker_finds_none_of_it
    test_scores_do_not_depend_on_the_other_base = \
        TestScoping.test_scores_do_not_depend_on_the_other_base
    test_ask_cites_and_quotes_only_the_callers_base = \
        TestScoping.test_ask_cites_and_quotes_only_the_callers_base

    @pytest.mark.parametrize("token", ["ana", "bo", "cy"])
    def test_the_candidates_came_from_the_index_of_each_base_read(self, client, world,
                                                                  as_token, configure, token):
        configure(rag_retrieval="hybrid")
        response = send(client, "/search", {"query": QUERY, "top_k": 20, "explain": True},
                        as_token(token))
        used = json.loads(response.content)["explain"]["parameters"]["search_index"]
        bases = {str(world.base_ids[slug]) for slug in READS[token]}
        for channel in ("vector", "lexical"):
            assert used[channel]["path"] == "index", used
            assert set(used[channel]["generations"]) == bases
