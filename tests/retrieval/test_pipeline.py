"""The retrieval pipeline by mode: vector unchanged, lexical and hybrid ranks, scores that stay
cosines, a calibrated confidence, and the explain output."""

from __future__ import annotations

import psycopg
import pytest
from pgvector import Vector

from access.callers import scope_all
from core.config import get_config
from embeddings import get_embedder
from knowledge.db_schema import index_connection
from retrieval.fusion import agreed_vector_weight, channel_agreement
from retrieval.pipeline import channels_fetch, pipeline_run
from retrieval.services import search
from retrieval.types import RetrievalRequest
from tests.conftest import PAGED_SOURCE
from tests.harness import config_changed
from tests.retrieval import first_release

IDENTIFIER = "read_cache_enabled"
QUESTION = "客户 P1 工单应该怎么升级？"


def config_for(mode: str, **changes):
    return config_changed(get_config(), rag_retrieval=mode, **changes)


def reference_scan(query: str, top_k: int) -> list[tuple[str, int, float]]:
    """The first release's exact scan, straight from its SQL."""
    embedder = get_embedder(config=get_config())
    with psycopg.Cursor(index_connection()) as cursor:
        cursor.execute(first_release.SEARCH, [Vector(embedder.embed_query(query)),
                                              embedder.provider, embedder.model, embedder.dim,
                                              top_k])
        return [(row[1], row[3], max(0.0, min(1.0, 1.0 - row[6]))) for row in cursor.fetchall()]


@pytest.mark.parametrize("query", [QUESTION, "Atlas CRM export limits", IDENTIFIER])
def test_vector_mode_is_the_first_releases_scan(sample_index, query):
    outcome = search(RetrievalRequest(query=query, scope=scope_all(), top_k=5),
                     config=config_for("vector"))
    assert [(hit.relative_path, hit.chunk_index, hit.score)
            for hit in outcome.results] == reference_scan(query, 5)
    assert outcome.confidence == outcome.results[0].score and outcome.explain is None


def test_hybrid_finds_an_identifier_the_vector_misses_and_is_confident(sample_index):
    vector = search(RetrievalRequest(query=IDENTIFIER, scope=scope_all(), top_k=5),
                    config=config_for("vector"))
    hybrid = search(RetrievalRequest(query=IDENTIFIER, scope=scope_all(), top_k=5),
                    config=config_for("hybrid"))
    assert hybrid.results[0].relative_path == "runbooks/API Latency Runbook.md"
    assert IDENTIFIER in hybrid.results[0].content
    assert vector.confidence < get_config().threshold <= hybrid.confidence


@pytest.mark.parametrize("mode", ["lexical", "hybrid"])
def test_scores_stay_cosines_and_results_are_unique(sample_index, mode):
    outcome = search(RetrievalRequest(query="Atlas CRM export limits", scope=scope_all(), top_k=8),
                     config=config_for(mode))
    cosines = {(hit.relative_path, hit.chunk_index): hit.score
               for hit in search(RetrievalRequest(query="Atlas CRM export limits",
                                                  scope=scope_all(), top_k=20),
                                 config=config_for("vector")).results}
    keys = [(hit.relative_path, hit.chunk_index) for hit in outcome.results]
    assert len(keys) == len(set(keys)) == 8
    for hit in outcome.results:
        if (hit.relative_path, hit.chunk_index) in cosines:
            assert hit.score == pytest.approx(cosines[(hit.relative_path, hit.chunk_index)])


def test_out_of_domain_question_keeps_the_vector_confidence_in_hybrid(sample_index):
    question = "Who won the FIFA World Cup in France?"
    vector = search(RetrievalRequest(query=question, scope=scope_all(), top_k=5),
                    config=config_for("vector"))
    hybrid = search(RetrievalRequest(query=question, scope=scope_all(), top_k=5),
                    config=config_for("hybrid"))
    assert hybrid.confidence <= vector.confidence < get_config().threshold


def test_explain_reports_every_stage(sample_index):
    outcome = search(RetrievalRequest(query=IDENTIFIER, scope=scope_all(), top_k=3, explain=True),
                     config=config_for("hybrid", rag_rerank="features"))
    explain = outcome.explain
    assert explain["mode"] == "hybrid"
    assert explain["parameters"]["rerank"] == "features" and explain["parameters"]["top_k"] == 3
    assert {"embed", "vector", "lexical", "fuse", "rerank"} <= set(explain["timings_ms"])
    assert explain["rerank"]["applied"] is True and explain["rerank"]["failure"] is None
    assert len(explain["results"]) == 3
    top = explain["results"][0]
    assert top["lexical_rank"] == 1 and top["bm25"] > 0 and top["rerank_rank"] == 1
    assert top["fused_rank"] is not None and top["cosine"] == outcome.results[0].score


@pytest.mark.parametrize(("mode", "rerank"), [("vector", "none"), ("lexical", "none"),
                                              ("hybrid", "none"), ("hybrid", "features")])
def test_page_spans_come_back_in_every_mode(paged_index, mode, rerank):
    outcome = search(RetrievalRequest(query=QUESTION, scope=scope_all(), top_k=10),
                     config=config_for(mode, rag_rerank=rerank))
    paged = [hit for hit in outcome.results if hit.relative_path == PAGED_SOURCE]
    notes = [hit for hit in outcome.results if hit.relative_path != PAGED_SOURCE]
    assert paged and notes
    assert [(hit.page_start, hit.page_end) for hit in paged] == [
        paged_index[hit.chunk_index] for hit in paged]
    assert {(hit.page_start, hit.page_end) for hit in paged} == {(3, 3), (3, 4)}
    assert [(hit.page_start, hit.page_end) for hit in notes] == [(None, None)] * len(notes)


def test_explain_names_the_fusion_and_the_weights_its_channels_agreement_gave(sample_index):
    query = "Atlas CRM export limits"
    config = config_for("hybrid", rag_rerank="none")
    explain = search(RetrievalRequest(query=query, scope=scope_all(), top_k=3, explain=True),
                     config=config).explain
    assert explain["parameters"]["fusion"] == "convex"
    embedder = get_embedder(config=config)
    channels = channels_fetch(query=query, vector=embedder.embed_query(query), width=50,
                              config=config, embedder=embedder,
                              knowledge_base_ids=scope_all().knowledge_base_ids)
    agreement = channel_agreement(rankings={
        "vector": [hit.chunk_id for hit in channels.vector],
        "lexical": [hit.chunk_id for hit in channels.lexical]})
    weight = agreed_vector_weight(weight=config.fusion_vector_weight, agreement=agreement)
    assert explain["parameters"]["fusion_weights"] == pytest.approx(
        {"vector": weight, "lexical": 1 - weight})
    rrf = search(RetrievalRequest(query=query, scope=scope_all(), top_k=3, explain=True),
                 config=config_for("hybrid", rag_fusion="rrf")).explain
    assert rrf["parameters"]["fusion"] == "rrf" and rrf["parameters"]["fusion_weights"] is None


def test_vector_weight_zero_gives_the_lexical_order(sample_index):
    query = "Atlas CRM export limits"
    lexical = search(RetrievalRequest(query=query, scope=scope_all(), top_k=10),
                     config=config_for("lexical", rag_rerank="none"))
    hybrid = search(RetrievalRequest(query=query, scope=scope_all(), top_k=10),
                    config=config_for("hybrid", rag_fusion_vector_weight=0.0,
                                      rag_rerank="none"))
    assert [(hit.relative_path, hit.chunk_index) for hit in hybrid.results] \
        == [(hit.relative_path, hit.chunk_index) for hit in lexical.results]


@pytest.mark.parametrize(("mode", "fusion", "rerank"), [
    ("vector", "convex", "none"), ("lexical", "convex", "none"), ("hybrid", "convex", "none"),
    ("hybrid", "rrf", "none"), ("hybrid", "convex", "features")])
def test_prefetched_channels_rank_exactly_as_a_search_of_its_own(sample_index, mode, fusion,
                                                                 rerank):
    config = config_for(mode, rag_fusion=fusion, rag_rerank=rerank)
    embedder = get_embedder(config=config)
    ids = scope_all().knowledge_base_ids
    for query in (QUESTION, "Atlas CRM export limits", IDENTIFIER):
        vector = embedder.embed_query(query)
        channels = channels_fetch(query=query, vector=vector, width=100, config=config,
                                  embedder=embedder, knowledge_base_ids=ids)
        request = RetrievalRequest(query=query, scope=scope_all(), top_k=10, mode=mode)
        own = pipeline_run(request, vector=vector, config=config, embedder=embedder)
        shared = pipeline_run(request, vector=vector, config=config, embedder=embedder,
                              channels=channels)
        assert [item.explain() for item in shared.results] \
            == [item.explain() for item in own.results]
        assert shared.confidence == own.confidence
    with pytest.raises(ValueError, match="prefetched channels are 100 deep; this run needs 150"):
        pipeline_run(RetrievalRequest(query=QUESTION, scope=scope_all(), top_k=150, mode=mode),
                     vector=vector, config=config, embedder=embedder, channels=channels)
