"""Which path the vector channel takes now, at which ef_search, and why: RAG_VECTOR_INDEX read
against the configured provider/model's HNSW index and its recall measurement
(index/vector_recall.py). Searches, /health and the status page all ask here, so they give
the same answer and the same reason.

- `exact`: the exact scan, always.
- `hnsw`: the index whenever one exists (it was asked for), at the measured ef_search (the
  smallest that reached RAG_HNSW_TARGET_RECALL, else the largest tried), or at HNSW_EF_SEARCH
  while none is measured; "unavailable" without an index, which retrieval refuses.
- `auto`: the index only when it holds RAG_HNSW_MIN_CHUNKS vectors and its measured recall
  reached the target, at that ef_search; otherwise the exact scan. An index nobody measured is
  not trusted: its recall could be 0.8 (`rag db index` measures right after building).

A measurement taken when the index held a count of vectors more than STALE_SHARE (20%) away
from today's is still used, and reported as stale: `rag db index --status` measures again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypedDict

import psycopg

from core.config import Config
from index.vector_index import HnswKey, vector_index_name
from index.vector_recall import STALE_SHARE, K, recall_text, vector_index_facts

REMEASURE = "`rag db index --status` measures again"
FULL_PRECISION = ("; the index is on full-precision vectors (built by an earlier release): "
                  "`rag db index` rebuilds it on half-precision ones, about 5 times smaller")


@dataclass(frozen=True)
class VectorPath:
    setting: str  # RAG_VECTOR_INDEX
    path: str  # "exact", "hnsw", or "unavailable" (`hnsw` asked for, no index)
    ef_search: int | None  # what the HNSW search runs with; None on the exact scan
    reason: str  # one sentence for /health and the status page; never a vector count
    target_recall: float  # RAG_HNSW_TARGET_RECALL
    recall: float | None = None  # measured recall@K at recall_ef_search; None: not measured
    recall_ef_search: int | None = None
    stale: bool = False
    measured_at: datetime | None = None
    key: HnswKey | None = None  # the index's key, which an HNSW search orders by

    def details(self) -> dict[str, Any]:
        """For /health's details: JSON values only."""
        return {"setting": self.setting, "path": self.path, "ef_search": self.ef_search,
                f"recall_at_{K}": self.recall, "recall_ef_search": self.recall_ef_search,
                "target_recall": self.target_recall, "stale": self.stale,
                "measured_at": self.measured_at.isoformat() if self.measured_at else None,
                "hnsw_key": self.key.describe() if self.key else None, "reason": self.reason}


class _Measurement(TypedDict):
    """A VectorPath's measurement fields, as keyword arguments."""

    recall: float
    recall_ef_search: int
    target_recall: float
    stale: bool
    measured_at: datetime


def vector_path_plan(*, conn: psycopg.Connection, config: Config, provider: str,
                     model: str) -> VectorPath:
    """The path, ef_search and reason of RAG_VECTOR_INDEX for this provider/model's vectors;
    one catalogue lookup (none for `exact`)."""
    setting, target = config.rag_vector_index, config.rag_hnsw_target_recall
    if setting == "exact":
        return VectorPath(setting=setting, path="exact", ef_search=None, target_recall=target,
                          reason="RAG_VECTOR_INDEX=exact")
    facts = vector_index_facts(conn=conn, index_name=vector_index_name(provider=provider,
                                                                       model=model))
    if facts is None or facts.key is None:
        if setting == "hnsw":
            return VectorPath(setting=setting, path="unavailable", ef_search=None,
                              target_recall=target,
                              reason="RAG_VECTOR_INDEX=hnsw but there is no HNSW index for the "
                                     "current embedding model; build it with `rag db index`")
        return VectorPath(setting=setting, path="exact", ef_search=None, target_recall=target,
                          reason="no HNSW index for the current embedding model")
    tuning, key = facts.tuning, facts.key
    older = "" if key.half else FULL_PRECISION
    few = facts.vectors < config.rag_hnsw_min_chunks
    if tuning is None:
        if setting == "hnsw":
            return VectorPath(setting=setting, path="hnsw", ef_search=config.hnsw_ef_search,
                              target_recall=target, key=key,
                              reason=f"RAG_VECTOR_INDEX=hnsw; recall@{K} not measured yet "
                                     f"(`rag db index` measures it), so HNSW_EF_SEARCH="
                                     f"{config.hnsw_ef_search}" + older)
        return VectorPath(setting=setting, path="exact", ef_search=None, target_recall=target,
                          reason=_few(config) if few else f"the HNSW index's recall@{K} is not "
                                 "measured yet; `rag db index` measures it")
    step = tuning.chosen(target=target)
    met = step.recall >= target
    stale = facts.stale
    measured = (f"recall@{K} {recall_text(step.recall)} {'≥' if met else '<'} target "
                f"{target:g} at ef_search {step.ef_search}")
    if not met and tuning.steps[-1].recall >= tuning.target_recall:
        # The ladder stopped where an older, lower target was met: it may climb further.
        measured += f" (tuned for target {tuning.target_recall:g}: {REMEASURE})"
    if stale:
        measured += (f"; measured when the index held over {STALE_SHARE:.0%} more or fewer "
                     f"vectors: {REMEASURE}")
    kept: _Measurement = {"recall": step.recall, "recall_ef_search": step.ef_search,
                          "target_recall": target, "stale": stale,
                          "measured_at": tuning.measured_at}
    if setting == "hnsw":
        return VectorPath(setting=setting, path="hnsw", ef_search=step.ef_search, key=key,
                          reason=f"RAG_VECTOR_INDEX=hnsw{'; ' if met else ', although '}"
                                 + measured + older, **kept)
    if few:
        return VectorPath(setting=setting, path="exact", ef_search=None, reason=_few(config),
                          **kept)
    return VectorPath(setting=setting, path="hnsw" if met else "exact",
                      ef_search=step.ef_search if met else None, reason="HNSW " + measured + older,
                      key=key if met else None, **kept)


def _few(config: Config) -> str:
    return (f"the HNSW index holds fewer than RAG_HNSW_MIN_CHUNKS ({config.rag_hnsw_min_chunks})"
            " vectors")

