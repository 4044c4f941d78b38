"""Search on the real database: ranking, fields, validation, readiness, provider isolation."""

from __future__ import annotations

import pytest
from django.db import connection

from access.callers import scope_all
from core.config import get_config
from core.errors import InvalidRequest
from embeddings import EmbeddingDimMismatch, FakeLexicalEmbedder
from retrieval.services import search
from retrieval.types import RetrievalRequest
from retrieval.vector import RetrievalNotReady


def run(query: str, top_k: int | None = None, **kwargs):
    # The first release's contract: the vector mode (tests/retrieval/test_pipeline.py covers
    # lexical and hybrid).
    return search(RetrievalRequest(query=query, scope=scope_all(), top_k=top_k, mode="vector"),
                  config=get_config(), **kwargs)


def test_escalation_question_ranks_the_escalation_policy_first(sample_index):
    outcome = run("客户 P1 工单应该怎么升级？")
    top = outcome.results[0]
    assert top.source == top.relative_path == "policies/Support Escalation Policy.md"
    assert outcome.confidence == top.score and top.score >= 0.2
    assert top.heading == top.heading_path[-1]
    # The hit is the stored chunk it names: its document, index and text agree with the tables.
    with connection.cursor() as cursor:
        cursor.execute("SELECT d.id, c.content FROM chunks c JOIN documents d "
                       "ON d.id = c.document_id WHERE d.relative_path = %s AND c.chunk_index = %s",
                       [top.relative_path, top.chunk_index])
        assert cursor.fetchall() == [(top.document_id, top.content)]
    scores = [hit.score for hit in outcome.results]
    assert scores == sorted(scores, reverse=True) and len(scores) == 5


def test_top_k_bounds(sample_index):
    assert len(run("Atlas CRM", top_k=1).results) == 1
    assert len(run("Atlas CRM", top_k=20).results) == 20
    for bad in (0, 21):
        with pytest.raises(InvalidRequest) as err:
            run("Atlas CRM", top_k=bad)
        assert err.value.http_status == 422 and err.value.exit_code == 2


def test_query_without_tokens_returns_nothing_with_zero_confidence(sample_index):
    outcome = run("？！ ... —")
    assert (outcome.confidence, outcome.results) == (0.0, [])


def test_chunk_without_heading_has_empty_heading(sample_index, tmp_path):
    from knowledge.ingest import IngestRequest, vault_ingest

    (tmp_path / "plain.md").write_text("zebra quagga okapi without any heading\n")
    vault_ingest(IngestRequest(vault_path=tmp_path, prepare_workers=0), config=get_config())
    hit = run("zebra quagga okapi").results[0]
    assert (hit.source, hit.heading_path, hit.heading) == ("plain.md", [], "")


def test_no_embeddings_for_current_config_is_not_ready(db):
    with pytest.raises(RetrievalNotReady) as err:
        run("anything")
    assert err.value.http_status == 503 and err.value.exit_code == 3


class WrongDimEmbedder(FakeLexicalEmbedder):
    def embed_query(self, text: str) -> list[float]:
        return [0.1] * 768


def test_query_vector_of_wrong_dimension_is_refused_before_any_query(sample_index):
    with pytest.raises(EmbeddingDimMismatch) as err:
        run("Atlas CRM", embedder=WrongDimEmbedder())
    assert err.value.http_status == 500 and err.value.details == {"expected": 1024, "actual": 768}


def test_vectors_of_other_providers_are_never_used(sample_index):
    # A perfect match for the query, but stored under another model: it must not surface.
    vector = FakeLexicalEmbedder().embed_query("zebra quagga")
    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM chunks ORDER BY id LIMIT 1")
        chunk_id = cursor.fetchone()[0]
        cursor.execute(
            "INSERT INTO embeddings (chunk_id, embedding_provider, embedding_model, "
            "embedding_dim, embedding) VALUES (%s, 'local-qwen3', 'Qwen/Qwen3-Embedding-0.6B', "
            "1024, %s::vector)", [chunk_id, str(vector)])
    outcome = run("zebra quagga")
    assert outcome.confidence < 0.2
