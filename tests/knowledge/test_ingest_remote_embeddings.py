"""Ingest and search through an openai-compatible embedding server (a local stub on a socket)."""

from __future__ import annotations

import json

import pytest
from django.db import connection

from access.callers import scope_all
from core.config import config_with, get_config
from embeddings import ChunkText, get_embedder
from embeddings.local import document_text
from embeddings.remote import EmbeddingUpstreamError
from knowledge.ingest import IngestRequest, vault_ingest
from retrieval.services import search
from retrieval.types import RetrievalRequest
from tests.embeddings.test_remote import expected
from tests.harness import ROOT
from tests.knowledge.stub_embeddings import StubEmbeddings

SAMPLE_VAULT = ROOT / "samples" / "acme-vault"
QUESTIONS = ["客户 P1 工单应该怎么升级？", "How do I export customer data from Atlas CRM?",
             "VPN 连不上怎么办"]

pytestmark = pytest.mark.django_db


def remote(stub: StubEmbeddings):
    return config_with(get_config(), EMBEDDING_PROVIDER="openai-compatible",
                       EMBEDDING_MODEL="stub-embed", EMBEDDING_BASE_URL=stub.base_url)


def stored(provider: str) -> dict[tuple[str, int], tuple[ChunkText, list[float]]]:
    """(path, chunk index) -> (what the embedder was given, the stored vector)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relative_path, c.chunk_index, c.content, c.heading_path, d.tags, "
            "e.embedding::text FROM embeddings e JOIN chunks c ON c.id = e.chunk_id "
            "JOIN documents d ON d.id = c.document_id WHERE e.embedding_provider = %s",
            [provider])
        return {(path, index): (ChunkText(content=content, heading_path=list(heading),
                                          relative_path=path, tags=list(tags or [])),
                                json.loads(vector))
                for path, index, content, heading, tags, vector in cursor.fetchall()}


def ranking(config) -> list[list[tuple[str, int, float]]]:
    return [[(hit.relative_path, hit.chunk_index, round(hit.score, 6)) for hit in search(
        RetrievalRequest(query=question, scope=scope_all(), top_k=5), config=config).results]
        for question in QUESTIONS]


def test_the_sample_vault_through_a_shuffling_server_is_what_in_order_answers_give(
        clean_tables):
    with StubEmbeddings(shuffle=True) as shuffling:
        result = vault_ingest(IngestRequest(vault_path=SAMPLE_VAULT), config=remote(shuffling))
        assert result.status == "success" and result.documents_added == 9
        assert shuffling.violations == [] and all(len(body["input"]) <= 10
                                                  for body in shuffling.requests)
        vectors = stored("openai-compatible")
        assert len(vectors) == result.chunks_written == result.embeddings_written
        shuffled_ranking = ranking(remote(shuffling))
    # Each chunk holds the vector of its own text (pgvector keeps 4-byte floats).
    for text, vector in vectors.values():
        assert vector == pytest.approx(expected(document_text(text)), abs=1e-6)
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE documents, ingest_runs RESTART IDENTITY CASCADE")
    with StubEmbeddings(shuffle=False) as in_order:
        vault_ingest(IngestRequest(vault_path=SAMPLE_VAULT), config=remote(in_order))
        assert stored("openai-compatible") == vectors
        assert ranking(remote(in_order)) == shuffled_ranking
    assert shuffled_ranking[0][0][0] == "policies/Support Escalation Policy.md"


def test_switching_to_the_server_fills_only_the_missing_vectors(clean_tables):
    vault_ingest(IngestRequest(vault_path=SAMPLE_VAULT), config=get_config())
    fake = stored("fake")
    with StubEmbeddings() as stub:
        switched = vault_ingest(IngestRequest(vault_path=SAMPLE_VAULT), config=remote(stub))
        again = vault_ingest(IngestRequest(vault_path=SAMPLE_VAULT), config=remote(stub))
    assert switched.documents_skipped == 9 and switched.chunks_written == 0
    assert switched.embeddings_written == len(fake) == len(stub.texts)
    assert stored("fake") == fake  # the first provider's vectors stay
    assert again.embeddings_written == 0


def test_a_bad_vector_skips_its_chunk_and_the_next_ingest_embeds_it(clean_tables):
    # "nan": the second vector of every answer holds NaN. Each such chunk is stored without a
    # vector, with a warning naming its note; everything else is stored and the run succeeds.
    with StubEmbeddings(behaviour="nan") as stub:
        result = vault_ingest(IngestRequest(vault_path=SAMPLE_VAULT), config=remote(stub))
        requests = len(stub.requests)
    assert result.status == "success" and result.documents_added == 9
    assert result.embeddings_skipped == requests > 0
    assert result.embeddings_written == result.chunks_written - result.embeddings_skipped
    assert len(stored("openai-compatible")) == result.embeddings_written
    skipped = [warning for warning in result.warnings if "without a vector" in warning["reason"]]
    assert skipped and all("not a finite number" in warning["reason"] for warning in skipped)
    assert sum(int(warning["reason"].split()[0]) for warning in skipped) == requests
    with connection.cursor() as cursor:
        cursor.execute("SELECT status, (metadata->>'embeddings_skipped')::int FROM ingest_runs")
        assert cursor.fetchall() == [("success", requests)]
        cursor.execute("SELECT count(*) FROM document_versions WHERE status = 'active'")
        assert cursor.fetchone() == (9,)
    # Nothing changed in the vault: the next run embeds only the chunks left without a vector.
    with StubEmbeddings() as stub:
        again = vault_ingest(IngestRequest(vault_path=SAMPLE_VAULT), config=remote(stub))
    assert again.documents_skipped == 9 and again.chunks_written == 0
    assert (again.embeddings_written, again.embeddings_skipped) == (requests, 0)
    assert len(stub.texts) == requests
    assert len(stored("openai-compatible")) == result.chunks_written


def test_a_server_failure_fails_the_run_and_stores_no_half_batch(clean_tables):
    with StubEmbeddings(behaviour="status:500") as broken:
        with pytest.raises(EmbeddingUpstreamError, match="HTTP 500"):
            vault_ingest(IngestRequest(vault_path=SAMPLE_VAULT),
                         config=config_with(remote(broken), EMBEDDING_MAX_RETRIES="0"))
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM embeddings")
        assert cursor.fetchone() == (0,)
        cursor.execute("SELECT status FROM ingest_runs")
        assert cursor.fetchall() == [("failed",)]


def test_a_question_is_embedded_by_the_server(clean_tables):
    with StubEmbeddings() as stub:
        vault_ingest(IngestRequest(vault_path=SAMPLE_VAULT), config=remote(stub))
        before = len(stub.requests)
        embedder = get_embedder(config=remote(stub))
        search(RetrievalRequest(query="VPN", scope=scope_all(), top_k=3), config=remote(stub),
               embedder=embedder)
    assert stub.requests[before:] == [{"model": "stub-embed", "input": ["VPN"],
                                       "encoding_format": "float", "dimensions": 1024}]


def test_batches_are_embedded_while_the_previous_one_is_written(clean_tables, tmp_path):
    from knowledge.ingest import EMBED_BATCH_CHUNKS

    vault = tmp_path / "vault"
    vault.mkdir()
    for number in range(160):
        sections = "\n\n".join(f"## Part {part}\n\nNote {number} part {part} about greisen "
                               f"{'tin ' * (part + 1)}and ridge {number % 7}."
                               for part in range(4))
        (vault / f"note-{number:03d}.md").write_text(f"# Note {number}\n\n{sections}\n")
    with StubEmbeddings() as stub:
        result = vault_ingest(IngestRequest(vault_path=vault), config=remote(stub))
        assert result.chunks_written > 2 * EMBED_BATCH_CHUNKS  # three batches or more
        vectors = stored("openai-compatible")
        for text, vector in vectors.values():
            assert vector == pytest.approx(expected(document_text(text)), abs=1e-6)
        # A failure in a later batch: the batches before it stay written, the run fails.
        for path in sorted(vault.iterdir()):
            path.write_text(path.read_text() + "\nChanged.\n")
        batches = -(-EMBED_BATCH_CHUNKS // 10)
        stub.script = ["ok"] * batches
        stub.behaviour = "status:400"
        with pytest.raises(EmbeddingUpstreamError, match="HTTP 400"):
            vault_ingest(IngestRequest(vault_path=vault), config=remote(stub))
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM documents d JOIN chunks c ON c.document_id = d.id "
                       "WHERE c.content LIKE '%Changed.%'")
        changed_chunks = cursor.fetchone()[0]
    assert 0 < changed_chunks <= EMBED_BATCH_CHUNKS + 10
