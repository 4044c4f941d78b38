"""The retrieval lab: one query through the retrieval pipeline with this run's mode, top_k,
candidates, reranker and knowledge base, and what each stage made of it — the vector, lexical,
fused and reranked lists side by side, the stage times, the effective parameters and the
confidence — read from the search's own explain output, so the page shows what search did
rather than a second opinion of it."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from django import forms
from django.http import QueryDict
from django.utils.safestring import SafeString
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from access.callers import Caller
from core.config import (
    MAX_TEXT_CHARS,
    RETRIEVAL_MODES,
    TOP_K_RANGE,
    Config,
    ConfigError,
    config_with,
)
from core.errors import InvalidRequest
from parsing.formats import format_name
from retrieval.filters import DocumentFilter
from retrieval.rerank import RERANKERS, reranker_status
from retrieval.services import explain_check, search
from retrieval.types import RetrievalMeasures, RetrievalRequest, SearchHit
from workbench.forms import FilterFields, choice_field
from workbench.rendering import excerpt_html

EXCERPT_CHARS = 200
# The form's fields for the settings whose ranges and names the configuration decides.
_FIELD_OF_VARIABLE = {"RAG_CANDIDATES": "candidates", "RAG_RERANK": "rerank"}


class LabForm(FilterFields):
    """One lab run's parameters (types and the API's own bounds; `lab_run` checks the rest),
    metadata filters included."""

    query = forms.CharField(label=_("Query"), max_length=MAX_TEXT_CHARS, strip=True,
                            widget=forms.Textarea(attrs={"rows": 2}))
    mode = forms.ChoiceField(label=_("Mode"), choices=[(mode, mode) for mode in RETRIEVAL_MODES])
    top_k = forms.IntegerField(label=_("Results (top k)"), min_value=TOP_K_RANGE[0],
                               max_value=TOP_K_RANGE[1])
    # Bounds and provider names are RAG_CANDIDATES' and RAG_RERANK's: the config checks them.
    candidates = forms.IntegerField(label=_("Candidates per channel"),
                                    widget=forms.NumberInput(attrs={"min": 1}))
    rerank = forms.CharField(label=_("Rerank"), widget=forms.Select)
    knowledge_base = forms.ChoiceField(label=_("Knowledge base"), required=False)

    def __init__(self, data: QueryDict | None = None, *, bases: list[dict[str, Any]],
                 config: Config, **kwargs: Any) -> None:
        super().__init__(data, initial={"mode": config.rag_retrieval,
                                        "top_k": config.rag_top_k,
                                        "candidates": config.rag_candidates,
                                        "rerank": config.rag_rerank}, **kwargs)
        choice_field(self, "knowledge_base").choices = [("", _("All my knowledge bases"))] + [
            (base["slug"], base["name"]) for base in bases]
        self.fields["rerank"].widget.choices = [
            (name, name) for name in lab_rerankers(config=config)]


@dataclass(frozen=True)
class LabEntry:
    """One chunk in one stage's list."""

    rank: int
    score: float | None
    chunk_id: int
    source: str
    heading_path: list[str]
    page_start: int | None
    page_end: int | None
    knowledge_base: str | None
    excerpt: SafeString
    extra: str = ""  # a second signal of the stage (the lexical match share)


@dataclass(frozen=True)
class LabColumn:
    """One stage's list, ordered by that stage's rank; `note` says why it is empty (the stage
    did not run or did not apply) or what part of the stage's list it shows."""

    stage: str
    title: str
    score_name: str
    ran: bool
    note: str
    entries: list[LabEntry] = field(default_factory=list)


@dataclass(frozen=True)
class LabRun:
    """What the page shows of one run."""

    mode: str
    confidence: float
    threshold: float
    parameters: dict[str, Any]
    timings_ms: dict[str, float]
    rerank: dict[str, Any] | None
    columns: list[LabColumn]
    result_count: int
    knowledge_bases: list[str]
    # Why nothing was reranked when rerank was off (provider none, or vector mode): then the
    # empty Reranked column is left out and this line says why instead.
    rerank_off: str = ""
    # What the search measured, for the request's trace.
    measures: RetrievalMeasures | None = None


def lab_rerankers(*, config: Config) -> list[str]:
    """The rerank providers that can run with this configuration: the providers table's own
    status check (settings present, model files there), which loads nothing."""
    return [name for name in RERANKERS
            if reranker_status(config=dataclasses.replace(config, rag_rerank=name)) == "ok"]


def lab_config(*, config: Config, candidates: int, rerank: str) -> Config:
    """`config` with this run's candidates and reranker, checked by the configuration's own
    validation (the bounds of RAG_CANDIDATES, the names of RAG_RERANK) and the reranker's
    status; raises InvalidRequest naming the field at fault."""
    try:
        checked = config_with(config, RAG_CANDIDATES=str(candidates), RAG_RERANK=rerank)
    except ConfigError as exc:
        name = _FIELD_OF_VARIABLE.get(exc.variable, exc.variable)
        raise InvalidRequest(gettext("%(field)s is not valid: %(detail)s")
                             % {"field": name, "detail": exc.message},
                             details={"field": name}) from None
    # The name is valid by now: only whether it can run here is left to check.
    status = reranker_status(config=dataclasses.replace(config, rag_rerank=rerank))
    if status != "ok":
        raise InvalidRequest(gettext("The rerank provider %(name)s cannot run with this "
                                     "configuration (%(status)s).")
                             % {"name": rerank, "status": status}, details={"field": "rerank"})
    return dataclasses.replace(config, rag_candidates=checked.rag_candidates,
                               rag_rerank=checked.rag_rerank)


def lab_run(*, query: str, mode: str, top_k: int, candidates: int, rerank: str,
            knowledge_base: str, caller: Caller, config: Config,
            filters: DocumentFilter | None = None) -> LabRun:
    """Search as the caller with these parameters and lay out its explain output stage by
    stage, with what the search measured (for the request's trace, which records them);
    nothing runs when one is invalid. Only the bases the caller researches are searched (all
    of them unless `knowledge_base` names one): the lab shows scores."""
    run_config = lab_config(config=config, candidates=candidates, rerank=rerank)
    scope = caller.researching().scope(slugs=[knowledge_base] if knowledge_base else None)
    explain_check(caller=caller, scope=scope)
    outcome = search(RetrievalRequest(query=query, scope=scope, top_k=top_k, mode=mode,
                                      explain=True, filters=filters), config=run_config)
    explain = outcome.explain or {}
    # explain.results[i] explains results[i] (docs/api.md): the hits carry the display fields
    # of the very chunks this scoped search returned, so no second query is needed.
    pairs = list(zip(outcome.results, explain.get("results", []), strict=True))
    parameters = explain["parameters"]
    return LabRun(mode=explain["mode"], confidence=outcome.confidence,
                  threshold=run_config.threshold, parameters=parameters,
                  timings_ms=explain["timings_ms"], rerank=explain["rerank"],
                  columns=_columns(explain, pairs), result_count=len(outcome.results),
                  knowledge_bases=sorted({hit.knowledge_base for hit, _item in pairs
                                          if hit.knowledge_base}),
                  rerank_off=_not_run_note("rerank", mode=explain["mode"], parameters=parameters)
                  if _rerank_off(parameters) else "", measures=outcome.measures)


# stage, title, score name, rank field, score field (None: computed), timing key
_STAGES = (("vector", _("Vector"), _("cosine"), "vector_rank", "cosine", "vector"),
           ("lexical", _("Lexical (BM25)"), "BM25", "lexical_rank", "bm25", "lexical"),
           ("fused", _("Fused"), _("fused score"), "fused_rank", "fused_score", "fuse"),
           ("rerank", _("Reranked"), _("rerank score"), "rerank_rank", "rerank_score", "rerank"))


def _columns(explain: dict[str, Any], pairs: list[tuple[SearchHit, dict[str, Any]]]
             ) -> list[LabColumn]:
    columns = []
    parameters = explain["parameters"]
    for stage, title, score_name, rank_field, score_field, timing in _STAGES:
        if stage == "rerank" and _rerank_off(parameters):
            continue
        ran = timing in explain["timings_ms"]
        entries = []
        for hit, item in pairs:
            if item[rank_field] is None:
                continue
            score = item[score_field]
            extra = (gettext("matched %(share)s of the query's terms")
                     % {"share": f"{item['matched_share']:.0%}"}
                     if stage == "lexical" and item["matched_share"] is not None else "")
            entries.append(_entry(hit, rank=item[rank_field], score=score, extra=extra))
        entries.sort(key=lambda entry: entry.rank)
        note = (_shown_note(stage, entries, parameters=parameters, final=len(pairs)) if ran
                else _not_run_note(stage, mode=explain["mode"], parameters=parameters))
        if stage == "rerank" and ran and not (explain["rerank"] or {}).get("applied"):
            note = _rerank_failed_note(explain["rerank"])
        columns.append(LabColumn(stage=stage, title=str(title), score_name=str(score_name), ran=ran,
                                 note=note, entries=entries))
    return columns


def _rerank_off(parameters: dict[str, Any]) -> bool:
    """Whether the run had no reranker at all (search's explain says `none` for the provider
    none and for vector mode), rather than one that ran, failed or had nothing to rerank."""
    return parameters["rerank"] == "none"


def _entry(hit: SearchHit, *, rank: int, score: float | None, extra: str) -> LabEntry:
    assert hit.chunk_id is not None  # a search's hits are stored chunks
    return LabEntry(rank=rank, score=score, chunk_id=hit.chunk_id, source=hit.source,
                    heading_path=list(hit.heading_path), page_start=hit.page_start,
                    page_end=hit.page_end, knowledge_base=hit.knowledge_base,
                    excerpt=excerpt_html(hit.content, limit=EXCERPT_CHARS,
                                         markdown=format_name(hit.relative_path) == "markdown"),
                    extra=extra)


def _not_run_note(stage: str, *, mode: str, parameters: dict[str, Any]) -> str:
    if stage == "vector":
        return gettext("Not run: %(mode)s mode does not search by vector.") % {"mode": mode}
    if stage == "lexical":
        return gettext("Not run: %(mode)s mode does not search by BM25.") % {"mode": mode}
    if stage == "fused":
        return (gettext("Not run: %(mode)s mode has a single channel and nothing to fuse.")
                % {"mode": mode})
    if mode == "vector":
        return gettext("Not run: vector mode keeps the cosine order.")
    if parameters["rerank"] == "none":
        return gettext("Not run: the rerank provider is none, so the fused order stands.")
    return gettext("Not run: there were no candidates to rerank.")


def _shown_note(stage: str, entries: list[LabEntry], *, parameters: dict[str, Any],
                final: int) -> str:
    width = parameters["candidates"]
    if len(entries) >= width:
        return ""
    ranked = (gettext("up to %(width)s per channel") if stage == "fused"
              else gettext("up to %(width)s")) % {"width": width}
    return ngettext("Shows %(shown)s of the candidates this stage ranked (%(ranked)s): those "
                    "among the final %(final)s result, the only ones the explain output lists.",
                    "Shows %(shown)s of the candidates this stage ranked (%(ranked)s): those "
                    "among the final %(final)s results, the only ones the explain output lists.",
                    final) % {"shown": len(entries), "ranked": ranked, "final": final}


def _rerank_failed_note(rerank: dict[str, Any] | None) -> str:
    failure = (rerank or {}).get("failure") or {}
    reason = failure.get("message") or gettext("no reason given")
    return gettext("Did not apply (%(reason)s): the fused order was kept.") % {"reason": reason}
