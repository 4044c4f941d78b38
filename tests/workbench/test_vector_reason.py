"""The status page's vector-search reason in the interface language: every sentence that
index/vector_path.py writes is recognised and translated, its numbers kept; one it does not
know is shown as written; and the page says the reason once."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from django.utils import translation

from core.config import get_config
from index import vector_path
from index.vector_index import HnswKey
from index.vector_recall import IndexFacts, RecallStep, VectorIndexTuning
from tests.harness import config_changed
from workbench.pages.vector_reason import vector_reason_shown

ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-CN,zh;q=0.9"}
CJK = re.compile(r"[\u4e00-\u9fff]")
HALF = HnswKey(half=True, dims=1024)
FULL = HnswKey(half=False, dims=1024)


def tuning(*steps: tuple[int, float], target: float = 0.98, vectors: int = 5000
           ) -> VectorIndexTuning:
    return VectorIndexTuning(steps=tuple(RecallStep(ef, recall) for ef, recall in steps),
                             target_recall=target, sample_size=100, vectors=vectors, seconds=1.0,
                             measured_at=datetime(2026, 9, 1, tzinfo=UTC))


MET = tuning((40, 0.95), (64, 0.985), (100, 0.99))
MISSED = tuning((100, 0.71), (1000, 0.8))
LOWER_TARGET = tuning((20, 0.9), (40, 0.93), target=0.9)  # stopped at an older, lower target
# setting, min chunks, the index's facts (None: no index), a number the reason must keep
CASES = {
    "exact": ("exact", 0, None, "exact"),
    "hnsw without an index": ("hnsw", 0, None, "rag db index"),
    "auto without an index": ("auto", 0, None, "HNSW"),
    "hnsw not measured": ("hnsw", 0, IndexFacts(5000, HALF, None), "HNSW_EF_SEARCH="),
    "hnsw not measured, full precision": ("hnsw", 0, IndexFacts(5000, FULL, None), "5"),
    "auto not measured, too few": ("auto", 20000, IndexFacts(5000, HALF, None), "20000"),
    "auto not measured": ("auto", 0, IndexFacts(5000, HALF, None), "recall@10"),
    "hnsw met": ("hnsw", 0, IndexFacts(5000, HALF, MET), "0.990"),
    "hnsw missed": ("hnsw", 0, IndexFacts(5000, HALF, MISSED), "0.800"),
    "hnsw tuned for a lower target": ("hnsw", 0, IndexFacts(5000, HALF, LOWER_TARGET), "0.9"),
    "auto met, stale": ("auto", 0, IndexFacts(9000, HALF, MET), "20%"),
    "auto missed, full precision": ("auto", 0, IndexFacts(5000, FULL, MISSED), "1000"),
    "auto measured, too few": ("auto", 20000, IndexFacts(5000, HALF, MET), "20000"),
}


def plan_reason(monkeypatch, setting: str, min_chunks: int, facts: IndexFacts | None) -> str:
    """The reason vector_path_plan writes for an index with these facts."""
    monkeypatch.setattr(vector_path, "vector_index_facts", lambda **_: facts)
    config = config_changed(get_config(), rag_vector_index=setting,
                            rag_hnsw_min_chunks=min_chunks, rag_hnsw_target_recall=0.98)
    return vector_path.vector_path_plan(conn=None, config=config, provider="fake",
                                        model="fake-lexical-v1").reason


@pytest.mark.parametrize("case", list(CASES))
def test_every_reason_the_plan_writes_is_said_in_chinese_with_its_numbers(monkeypatch, case):
    setting, min_chunks, facts, kept = CASES[case]
    reason = plan_reason(monkeypatch, setting, min_chunks, facts)
    with translation.override("zh-hans"):
        chinese = str(vector_reason_shown(reason))
    english = str(vector_reason_shown(reason))
    assert CJK.search(chinese), (reason, chinese)
    assert kept in chinese and kept in english, (reason, chinese)
    assert "`" not in chinese and "`" not in english  # commands are <code>
    assert english != reason  # said again, as a sentence of the page


def test_the_notes_after_a_measurement_are_translated_too(monkeypatch):
    reason = plan_reason(monkeypatch, "auto", 0, IndexFacts(9000, FULL, LOWER_TARGET))
    assert "tuned for target 0.9" in reason and "more or fewer vectors" in reason
    assert "full-precision" in reason
    with translation.override("zh-hans"):
        chinese = str(vector_reason_shown(reason))
    assert "按目标 0.9 调优" in chinese and "相差超过 20%" in chinese and "全精度" in chinese
    assert not re.search(r"[a-z]{4,} [a-z]{4,} [a-z]{4,}", chinese), chinese  # no English prose


def test_a_reason_it_does_not_know_is_shown_as_written_and_escaped():
    shown = str(vector_reason_shown("a <new> reason; run `rag db index`"))
    assert shown == "a &lt;new&gt; reason; run <code>rag db index</code>"


def test_the_status_page_says_the_reason_once_in_its_language(reader, sample_index,
                                                             config_override):
    config_override(rag_vector_index="auto")
    html = reader.get("/workbench/status/").content.decode()
    assert html.lower().count("no hnsw index") == 1
    assert ('<p id="vector-reason">Why: The current embedding model has no HNSW index.</p>'
            in html)
    chinese = reader.get("/workbench/status/", **ZH).content.decode()
    assert '<p id="vector-reason">原因： 当前嵌入模型没有 HNSW 索引。</p>' in chinese
    assert chinese.count("没有 HNSW 索引") == 1 and "no HNSW index" not in chinese
    config_override(rag_vector_index="exact")
    html = reader.get("/workbench/status/").content.decode()
    assert html.count("RAG_VECTOR_INDEX=exact") == 1
    assert "No HNSW index for the current embedding model." in html
