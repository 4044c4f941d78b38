"""Refusal precision and recall of both RAG_REFUSAL rules on a written question set
(eval/refusal-questions.yaml): answerable and unanswerable questions of the sample vaults and of
SciFact, each asked of its own knowledge base, with a held-out `test` split and a `dev` split.

    .venv/bin/python bench/refusal_questions.py --split test
    .venv/bin/python bench/refusal_questions.py --split dev --dump .local/refusal/questions

Each of the file's `bases` is ingested first, into a base of its own named `refusal-<name>`: a
vault (which must not be another base's source), or a BEIR folder's corpus as
`rag eval --beir --kb` writes it; a second run skips the unchanged files. Run it on a database
where nothing else is in those bases (a fresh one: `rag pg start`, `rag db init`).

Every question of the split is searched once as /ask searches (RAG_TOP_K, RAG_RETRIEVAL, its
base only), and both rules decide on the same results, as `answering/refusal.py` ships them:
`threshold` (the confidence against the embedding provider's threshold, or
RAG_MIN_SIMILARITY) and `signals` (its model and cut, RAG_MIN_SIMILARITY a floor when set);
refusing means mode `no_answer` (so no results at all is a refusal under both). The JSON report
gives, per rule, overall and per base: refusal precision (the refusals that were right), refusal
recall (the unanswerable questions refused) and the answer rate of the answerable ones; the same
over the answerable questions whose expected source retrieval found in the top k (the fit's
convention, bench/fit_refusal.py); hit@k; every question one rule gets wrong, with its signals;
and the machine's load average before and after. `--dump FOLDER` also writes the split's
measurements as bench/fit_refusal.py dumps (one per base), so a rule can be fitted or tuned on
the dev split (`fit_refusal.py fit --train FOLDER/dev@*.json --test FOLDER/test@*.json`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import Any

from _setup import ROOT, django_setup

from retrieval.types import RetrievalRequest

RULES = ("threshold", "signals")


@dataclasses.dataclass(frozen=True)
class Asked:
    """One question, what retrieval found for it and what each rule decided."""

    id: str
    base: str
    answerable: bool
    hit_rank: int | None
    confidence: float
    results: int
    signals: dict[str, Any]
    probability: float
    refused: dict[str, bool]  # rule -> mode no_answer


def questions_read(path: Path, split: str) -> tuple[dict[str, dict[str, str]], list[tuple]]:
    """The file's bases and its questions of `split`, each as (base, Question)."""
    from core.safe_yaml import yaml_load_plain
    from evaluation.questions import questions_parse

    text = path.read_text(encoding="utf-8")
    questions = questions_parse(text, source=str(path))  # checks every field it knows
    raw = yaml_load_plain(text)
    bases = raw.get("bases") or {}
    chosen = []
    for entry, question in zip(raw["questions"], questions, strict=True):
        if entry.get("base") not in bases or entry.get("split") not in ("dev", "test"):
            raise SystemExit(f"{question.id}: base must be one of {sorted(bases)} and split "
                             "dev or test")
        if entry["split"] == split:
            chosen.append((entry["base"], question))
    return bases, chosen


def base_ready(*, name: str, spec: dict[str, str], config) -> int:
    """The id of the base `refusal-<name>`, ingested (unchanged files skipped)."""
    from core.errors import NotFound
    from evaluation.beir import beir_index, beir_load
    from knowledge.bases import kb_create, kb_get
    from knowledge.ingest import IngestRequest, vault_ingest

    slug = f"refusal-{name}"
    if "beir" in spec:
        collection = beir_load(path=ROOT / spec["beir"], split="test")
        base, _, result = beir_index(collection=collection, config=config, slug=slug)
    else:
        folder = (ROOT / spec["vault"]).resolve()
        try:
            base = kb_get(slug).id
        except NotFound:
            base = kb_create(slug=slug, name=f"Refusal questions: {name}",
                             sources=[str(folder)]).id
        result = vault_ingest(IngestRequest(vault_path=folder, prepare_workers=0), config=config)
    print(f"{slug}: {result.chunks_written} chunks written", file=sys.stderr)
    return base


def question_ask(*, base: str, base_id: int, question, config) -> Asked:
    """Search `question` in its base and decide it under both rules."""
    from access.callers import Scope
    from answering.modes import MODE_NO_ANSWER, MODE_RAG, mode_for
    from answering.refusal import refusal_decide, signals_probability
    from retrieval.services import search
    from retrieval.signals import signals_measure

    outcome = search(RetrievalRequest(query=question.question, scope=Scope.of([base_id]),
                                      top_k=config.rag_top_k), config=config)
    signals = signals_measure(query=question.question, hits=outcome.results,
                              confidence=outcome.confidence)
    refused = {}
    for rule in RULES:
        decided = refusal_decide(signals=signals,
                                 config=dataclasses.replace(config, rag_refusal=rule))
        mode = mode_for(grounded=decided.grounded, fallback_requested=False,
                        fallback_enabled=False, has_sources=bool(outcome.results))
        refused[rule] = mode == MODE_NO_ANSWER
    sources = list(dict.fromkeys(hit.source for hit in outcome.results))
    rank = next((position for position, source in enumerate(sources, start=1)
                 if source in question.expected_sources), None)
    return Asked(id=question.id, base=base, answerable=question.expected_mode == MODE_RAG,
                 hit_rank=rank, confidence=round(outcome.confidence, 6),
                 results=len(outcome.results), signals=signals.as_dict(),
                 probability=round(signals_probability(signals), 4), refused=refused)


def scores(asked: list[Asked], rule: str) -> dict[str, Any]:
    """Refusal precision and recall, and the answer rate of the answerable questions."""
    refused = [item for item in asked if item.refused[rule]]
    unanswerable = [item for item in asked if not item.answerable]
    answerable = [item for item in asked if item.answerable]
    right = sum(not item.answerable for item in refused)

    def ratio(part: int, whole: int) -> float | None:
        return round(part / whole, 4) if whole else None

    return {"answerable": len(answerable), "unanswerable": len(unanswerable),
            "refused": len(refused),
            "refusal_precision": ratio(right, len(refused)),
            "refusal_recall": ratio(right, len(unanswerable)),
            "answer_rate": ratio(sum(not item.refused[rule] for item in answerable),
                                 len(answerable))}


def report(asked: list[Asked], *, split: str, config, load: dict[str, Any]) -> dict[str, Any]:
    """The JSON report of one split (see the module docstring)."""
    retrieved = [item for item in asked if not item.answerable or item.hit_rank is not None]
    groups = {"all": asked, **{f"base {name}": [item for item in asked if item.base == name]
                               for name in sorted({item.base for item in asked})}}
    answerable = [item for item in asked if item.answerable]
    return {
        "split": split, "embedding_provider": config.embedding_provider,
        "retrieval": config.rag_retrieval, "top_k": config.rag_top_k,
        "threshold": config.threshold, "rag_min_similarity": config.rag_min_similarity,
        "scores": {group: {rule: scores(members, rule) for rule in RULES}
                   for group, members in groups.items()},
        "scores_retrieved_only": {rule: scores(retrieved, rule) for rule in RULES},
        "hit_at_k": (round(sum(item.hit_rank is not None for item in answerable)
                           / len(answerable), 4) if answerable else None),
        # The rule's mistakes, one line each: what issue #37 asks about first are the
        # answerable questions `signals` refuses while `threshold` answers them.
        "wrong": [{"id": item.id, "base": item.base, "answerable": item.answerable,
                   "refused": item.refused, "hit_rank": item.hit_rank,
                   "probability": item.probability, "signals": item.signals}
                  for item in asked
                  if any(item.refused[rule] == item.answerable for rule in RULES)],
        "load": load,
    }


def dumps_write(asked: list[Asked], *, folder: Path, split: str, config) -> None:
    """The measurements in bench/fit_refusal.py's dump format, one file per base."""
    folder.mkdir(parents=True, exist_ok=True)
    for base in sorted({item.base for item in asked}):
        queries = [{"id": item.id, "own": item.answerable, "hit_rank": item.hit_rank,
                    "confidence": item.confidence, "results": item.results,
                    "signals": item.signals} for item in asked if item.base == base]
        (folder / f"{split}@{base}.json").write_text(json.dumps({
            "collection": f"questions:{base}", "split": split, "kb": f"refusal-{base}",
            "cross": False, "embedding_provider": config.embedding_provider,
            "embedding_model": config.embedding_model, "retrieval": config.rag_retrieval,
            "rerank": config.rag_rerank, "top_k": config.rag_top_k,
            "threshold": config.threshold, "queries": queries}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", default=str(ROOT / "eval" / "refusal-questions.yaml"))
    parser.add_argument("--split", choices=("dev", "test"), default="test")
    parser.add_argument("--dump", default=None, help="a folder for fit_refusal.py dumps")
    args = parser.parse_args()
    django_setup()
    from core.config import get_config

    config = get_config()
    bases, chosen = questions_read(Path(args.questions), args.split)
    ids = {name: base_ready(name=name, spec=bases[name], config=config)
           for name in sorted({base for base, _ in chosen})}
    before = os.getloadavg()
    asked = [question_ask(base=base, base_id=ids[base], question=question, config=config)
             for base, question in chosen]
    load = {"before": [round(value, 2) for value in before],
            "after": [round(value, 2) for value in os.getloadavg()], "cores": os.cpu_count()}
    if args.dump:
        dumps_write(asked, folder=Path(args.dump), split=args.split, config=config)
    print(json.dumps(report(asked, split=args.split, config=config, load=load), indent=2,
                     ensure_ascii=False))


if __name__ == "__main__":
    main()
