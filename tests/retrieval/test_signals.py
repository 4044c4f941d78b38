"""The refusal signals of a result list: top, gap, support and key-term coverage."""

from __future__ import annotations

import pytest

from access.callers import scope_all
from core.config import get_config
from embeddings import get_embedder
from retrieval.pipeline import pipeline_run
from retrieval.signals import RefusalSignals, signals_measure
from retrieval.types import RetrievalRequest, SearchHit


def hit(document_id: int, score: float, content: str = "", path: str = "a.md") -> SearchHit:
    return SearchHit(content=content, source=path, relative_path=path, heading_path=[],
                     heading="", score=score, chunk_index=0, document_id=document_id)


def test_signals_of_a_constructed_result_list() -> None:
    hits = [hit(1, 0.50, "Atlas export limits per day"),
            hit(1, 0.45, "nothing of the query here"),  # the same document: no competitor
            hit(2, 0.42, "exports are limited"),
            hit(3, 0.41, "the atlas is a map"),
            hit(4, 0.10, "unrelated")]
    signals = signals_measure(query="What are the Atlas export limits?", hits=hits,
                              confidence=0.55)
    # The confidence is passed through; gap = (0.50 - 0.42) / 0.50 between documents 1 and 2;
    # documents 1, 2 and 3 are within SUPPORT_RATIO (0.8) of the best cosine, 4 is not; the
    # first hit holds all three key words (atlas, export, limit: stemmed, stop words out).
    assert signals == RefusalSignals(top=0.55, gap=pytest.approx(0.16), support=3, coverage=1.0,
                              cjk_share=0.0)


def test_coverage_is_the_best_single_results_share_of_key_words() -> None:
    hits = [hit(1, 0.3, "atlas"), hit(2, 0.2, "export"), hit(3, 0.1, "atlas export")]
    assert signals_measure(query="atlas export limits", hits=hits[:2],
                           confidence=0.3).coverage == pytest.approx(1 / 3)
    assert signals_measure(query="atlas export limits", hits=hits,
                           confidence=0.3).coverage == pytest.approx(2 / 3)
    # A word found in the result's path or headings counts too.
    assert signals_measure(query="limits", hits=[hit(1, 0.3, "x", path="limits.md")],
                           confidence=0.3).coverage == 1.0


def test_one_document_alone_has_the_whole_gap_and_no_results_have_none() -> None:
    alone = signals_measure(query="atlas", hits=[hit(7, 0.3, "atlas"), hit(7, 0.2, "atlas")],
                            confidence=0.3)
    assert (alone.gap, alone.support) == (1.0, 1)
    assert signals_measure(query="atlas", hits=[], confidence=0.0) == RefusalSignals(
        top=0.0, gap=0.0, support=0, coverage=0.0, cjk_share=0.0)


def test_chinese_key_words_are_bigrams_and_their_share_is_reported() -> None:
    # zk-1207 (with its parts) and au are words; 的 and 品位 come from CJK runs.
    signals = signals_measure(query="ZK-1207 的 Au 品位？",
                              hits=[hit(1, 0.4, "ZK-1207 孔 Au 品位 3.2 g/t")], confidence=0.4)
    assert signals.cjk_share == 0.5 and signals.coverage == 0.75
    assert signals_measure(query="品位多少", hits=[], confidence=0.0).cjk_share == 1.0


def test_a_query_of_stop_words_only_covers_nothing() -> None:
    assert signals_measure(query="what is it", hits=[hit(1, 0.9, "what is it")],
                           confidence=0.9).coverage == 0.0


def test_third_person_pronouns_are_no_key_words() -> None:
    row = hit(1, 0.2, "| Aiko Tanaka | Perception lead | Tokyo |")
    # perception and lead are in the row, based is not; she, he and hers stand for the person.
    for query in ("Who is the perception lead and where is she based?",
                  "Where is he based, the perception lead of hers?"):
        assert signals_measure(query=query, hits=[row], confidence=0.2).coverage == \
            pytest.approx(2 / 3)
    # A pronoun alone is no key word either; `us` stays one (it is also the country).
    assert signals_measure(query="what did she say", hits=[row], confidence=0.2).coverage == 0.0
    assert signals_measure(query="US perception lead", hits=[row],
                           confidence=0.2).coverage == pytest.approx(2 / 3)


def test_pipeline_run_reports_the_signals_of_its_results(sample_index) -> None:
    config = get_config()
    embedder = get_embedder(config=config)
    query = "Atlas CRM export limits"
    run = pipeline_run(RetrievalRequest(query=query, scope=scope_all(), top_k=5, mode="hybrid",
                                        explain=True),
                       vector=embedder.embed_query(query), config=config, embedder=embedder)
    expected = signals_measure(query=query, hits=[item.hit for item in run.results],
                               confidence=run.confidence)
    assert run.signals == expected and run.signals.top == run.confidence
    assert run.explain()["signals"] == expected.as_dict()
    assert run.signals.coverage > 0 and run.signals.support >= 1
