"""The outbound policy: a local-only base's text never reaches a server outside this machine.

Every stub here listens on 127.0.0.1, so the tests take loopback off RAG_OUTBOUND_LOCAL_HOSTS
(`outside`): to the policy the stubs are then servers elsewhere. A stub that receives a local-only
base's chunk fails the test by its request count or by what it was sent.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from django.db import connection
from django.test import Client

from access.callers import scope_all
from answering.api_schemas import ask_body
from answering.services import AnswerRequest
from core.config import config_with, get_config
from embeddings.outbound import OutboundRefused, endpoint_is_local
from knowledge.bases import kb_create, kb_get, kb_update
from knowledge.ingest import IngestRequest, vault_ingest
from ops.db_init import db_init
from retrieval.types import RetrievalRequest
from tests.answering.stub_openai import StubOpenAI
from tests.harness import ROOT
from tests.knowledge.stub_embeddings import StubEmbeddings
from tests.retrieval.stub_rerank import StubRerank
from traces.recording import trace_record, traced

SAMPLE_VAULT = ROOT / "samples" / "acme-vault"
QUESTION = "客户 P1 工单应该怎么升级？"

pytestmark = pytest.mark.django_db


def outside(**settings: str):
    """The configuration with loopback counted as outside this machine, plus `settings`."""
    return config_with(get_config(), RAG_OUTBOUND_LOCAL_HOSTS="this-machine.invalid",
                       **settings)


def remote_embedding(stub: StubEmbeddings, **settings: str):
    return outside(EMBEDDING_PROVIDER="openai-compatible", EMBEDDING_MODEL="stub-embed",
                   EMBEDDING_BASE_URL=stub.base_url, **settings)


def remote_llm(stub: StubOpenAI, project_root: Path):
    """The stub as the LLM, its call slots in the test's own folder (llm-slots)."""
    return replace(outside(LLM_PROVIDER="openai-compatible", LLM_BASE_URL=stub.base_url,
                           LLM_MODEL="stub-model", LLM_API_KEY="sk-outbound-test"),
                   project_root=project_root)


@pytest.fixture
def vault_in_private(tmp_path):
    """A copy of the sample vault, a source of the new base `private` (local-only)."""
    import shutil

    folder = tmp_path / "vault"
    shutil.copytree(SAMPLE_VAULT, folder)
    kb_create(slug="private", name="Private", sources=[str(folder)])
    return folder


def test_new_bases_are_local_only_and_bases_from_before_the_policy_keep_sending(
        schema_from_before):
    assert kb_get("default").outbound == "local-only"
    assert kb_create(slug="fresh").outbound == "local-only"
    assert kb_create(slug="open", outbound="allowed").outbound == "allowed"
    with connection.cursor() as cursor:  # a database from before the policy existed
        cursor.execute("ALTER TABLE knowledge_bases DROP COLUMN outbound")
    schema_from_before("knowledge", "0009_knowledge_bases")
    db_init()
    assert {kb_get(slug).outbound for slug in ("default", "fresh", "open")} == {"allowed"}
    assert kb_create(slug="after").outbound == "local-only"


def test_loopback_is_this_machine_unless_the_setting_says_otherwise():
    assert endpoint_is_local("http://127.0.0.1:9/v1", config=get_config())
    assert endpoint_is_local("http://[::1]:9/v1", config=get_config())
    assert not endpoint_is_local("https://api.example.com/v1", config=get_config())
    assert not endpoint_is_local("http://127.0.0.1:9/v1", config=outside())
    assert endpoint_is_local("http://gpu-1:8080/v1",
                             config=config_with(get_config(), RAG_OUTBOUND_LOCAL_HOSTS="GPU-1"))


def test_an_ingest_of_a_local_only_base_sends_nothing_to_a_remote_embedder(vault_in_private,
                                                                          caplog):
    with StubEmbeddings() as stub:
        with pytest.raises(OutboundRefused, match="local-only knowledge base.*private") as refused:
            vault_ingest(IngestRequest(vault_path=vault_in_private), config=remote_embedding(stub))
        assert stub.requests == []
        assert refused.value.http_status == 403
        assert refused.value.details == {"knowledge_bases": ["private"],
                                         "what": "embedding this folder's chunks"}
        # Where the server is goes to the log, never into the error a caller gets.
        assert "127.0.0.1" not in refused.value.message and "to 127.0.0.1" in caplog.text
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM documents")
            assert cursor.fetchone() == (0,)
        kb_update(slug="private", outbound="allowed")
        result = vault_ingest(IngestRequest(vault_path=vault_in_private),
                              config=remote_embedding(stub))
    assert result.status == "success" and len(stub.texts) == result.embeddings_written
    assert result.outbound == {"127.0.0.1": {
        "texts": len(stub.texts), "bytes": sum(len(text.encode()) for text in stub.texts)}}
    with connection.cursor() as cursor:
        cursor.execute("SELECT metadata -> 'outbound' FROM ingest_runs WHERE id = %s",
                       [result.run_id])
        assert json.loads(cursor.fetchone()[0]) == result.outbound


def test_an_embedding_server_on_this_machine_may_embed_a_local_only_base(vault_in_private):
    with StubEmbeddings() as stub:
        config = config_with(remote_embedding(stub), RAG_OUTBOUND_LOCAL_HOSTS="127.0.0.1")
        result = vault_ingest(IngestRequest(vault_path=vault_in_private), config=config)
    assert result.status == "success" and result.outbound == {}


def test_a_question_over_a_local_only_base_never_reaches_a_remote_llm(sample_index, tmp_path):
    from answering.services import ON_LLM_ERROR_SOURCES, ask

    with StubOpenAI() as stub:
        config = remote_llm(stub, tmp_path)
        with pytest.raises(OutboundRefused, match="the answer's context.*default") as refused:
            ask_body(ask(AnswerRequest(question=QUESTION, scope=scope_all(), top_k=5,
                                       fallback=False), config=config), trace_id=None)
        assert refused.value.code == "outbound_refused"
        shown = ask_body(ask(AnswerRequest(question=QUESTION, scope=scope_all(), top_k=5,
                                           fallback=False, on_llm_error=ON_LLM_ERROR_SOURCES),
                             config=config), trace_id=None)
        assert stub.requests == []
    assert shown["mode"] == "rag" and shown["citations"]
    assert "outbound_refused" in shown["notice"]["message"]


def test_an_allowed_base_is_answered_and_the_trace_says_what_left(sample_index, tmp_path):
    from answering.services import ask

    kb_update(slug="default", outbound="allowed")
    with StubOpenAI() as stub, traced(operation="ask", channel="test") as trace:
        answer = ask(AnswerRequest(question=QUESTION, scope=scope_all(), top_k=5, fallback=False,
                                   trace=trace.ref()), config=remote_llm(stub, tmp_path))
        trace_record(trace, *answer.measures)
        body = ask_body(answer, trace_id=trace.id)
    assert body["mode"] == "rag" and len(stub.requests) == 1
    [record] = trace.parameters["outbound"]
    sent = json.dumps(stub.requests[0].body["messages"], ensure_ascii=False)
    assert record["what"] == "LLM" and record["endpoint_host"] == "127.0.0.1"
    assert record["knowledge_bases"] == ["default"]
    assert record["chunk_ids"] and all(isinstance(chunk, int) for chunk in record["chunk_ids"])
    assert record["bytes"] == sum(len(message["content"].encode())
                                  for message in stub.requests[0].body["messages"])
    assert record["bytes"] <= len(sent.encode())


def test_a_remote_reranker_never_gets_a_local_only_base_s_candidates(sample_index):
    from retrieval.services import search

    with StubRerank() as stub:
        config = outside(RAG_RERANK="openai-compatible", RERANK_BASE_URL=stub.base_url,
                         RERANK_MODEL="stub-reranker", RERANK_API_KEY="sk-rerank-outbound")
        outcome = search(RetrievalRequest(query=QUESTION, scope=scope_all(), top_k=5, mode="hybrid",
                                          explain=True), config=config)
        assert stub.requests == []
        assert outcome.results  # the fused order, unreranked
        assert outcome.explain["rerank"]["failure"]["code"] == "outbound_refused"
        assert outcome.explain["rerank"]["applied"] is False
        kb_update(slug="default", outbound="allowed")
        with traced(operation="search", channel="test") as trace:
            trace_record(trace, search(RetrievalRequest(query=QUESTION, scope=scope_all(),
                                                        top_k=5, mode="hybrid"),
                                       config=config).measures)
        assert len(stub.requests) == 1
    assert [record["what"] for record in trace.parameters["outbound"]] == ["rerank"]


def test_a_conversation_over_a_local_only_base_is_condensed_here(sample_index, tmp_path):
    from conversations.condense import RULE, Turn, standalone_query

    turns = [Turn(question="数据库主库故障怎么处理？", standalone_query="数据库主库故障怎么处理？",
                  answer="按 Runbook 切换到备库 [1]。")]
    with StubOpenAI(answer="数据库 主库 故障 P2") as stub:
        config = remote_llm(stub, tmp_path)
        ids = scope_all().knowledge_base_ids
        condensed = standalone_query(question="那 P2 呢？", turns=turns, config=config,
                                     knowledge_base_ids=ids)
        assert stub.requests == []
        assert (condensed.method, condensed.llm_error) == (RULE, "outbound_refused")
        kb_update(slug="default", outbound="allowed")
        assert standalone_query(question="那 P2 呢？", turns=turns, config=config,
                                knowledge_base_ids=ids).method == "llm"
        assert len(stub.requests) == 1


def test_the_policy_is_set_and_shown_through_the_api(db):
    client = Client(raise_request_exception=False)
    kb_create(slug="field", name="Field")
    response = client.patch("/knowledge-bases/field", data={"outbound": "allowed"},
                            content_type="application/json")
    assert response.status_code == 200 and json.loads(response.content)["outbound"] == "allowed"
    response = client.patch("/knowledge-bases/field", data={"outbound": "anywhere"},
                            content_type="application/json")
    assert response.status_code == 422
    response = client.post("/knowledge-bases", data={"slug": "made"},
                           content_type="application/json")
    assert json.loads(response.content)["outbound"] == "local-only"
    listed = json.loads(client.get("/knowledge-bases").content)
    assert {base["slug"]: base["outbound"] for base in listed} == {
        "default": "local-only", "field": "allowed", "made": "local-only"}


def test_an_upload_job_refused_by_the_policy_fails_at_once(clean_tables, config_override,
                                                          tmp_path):
    from access.callers import OPERATOR
    from jobs.queue import job_get
    from jobs.worker import Worker
    from knowledge.documents import document_upload

    config_override(project_root=tmp_path)
    kb_create(slug="field", name="Field reports")  # local-only, as every new base
    done = document_upload(caller=OPERATOR, slug="field", filename="memo.txt",
                           chunks=[b"Greisen veins on ridge 9 carry tin."])
    with StubEmbeddings() as stub:
        # The worker embeds through a server elsewhere: the policy forbids it, and always will.
        config_override(**{field: getattr(remote_embedding(stub), field) for field in (
            "embedding_provider", "embedding_model", "embedding_base_urls",
            "rag_outbound_local_hosts")}, project_root=tmp_path)
        Worker(poll_seconds=0.01).run(until_idle=True)
        assert stub.requests == []
    job = job_get(done.job_id)
    assert (job.status, job.attempt) == ("failed", 1), job.last_error
    assert job.max_attempts > 1 and "local-only" in job.last_error
