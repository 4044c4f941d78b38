"""Written answers of the offline answerers, LLM_PROVIDER=fake and extractive, side by side:
whether they quote the reference, whether their cited blocks hold their sentences, how long they
are and how long they take.

    .venv/bin/python bench/answer_quality.py vault
    .venv/bin/python bench/answer_quality.py squad cmrc2018_dev.json --questions 200 --seed 13

`vault` asks every question of eval/questions.yaml that lists `answer_contains` (spans of the
sample vault's text a right answer quotes) through the whole ask path (/ask's: retrieval, the
refusal rule, the context, the answerer), in the knowledge bases `--kb` names (default: all);
run it after `rag ingest samples/acme-vault` on a database where nothing else is in them.

`--providers` names the answerers (default: fake extractive); `openai-compatible` is the model
server the configuration names (LLM_BASE_URL, LLM_MODEL and its key, as `rag llm use` writes
them), for a real model beside the offline ones; `--max-tokens N` bounds each of its answers.

`squad` takes a SQuAD-style file (CMRC 2018's `squad-style-data/cmrc2018_dev.json`, Chinese; or
SQuAD v1.1's dev file, English) and the seeded sample of its questions that tools/squad_to_beir.py
makes (every question sorted by id, `random.Random(seed).sample`, sorted again), so the sample
is that of the retrieval benchmark with the same N and seed; questions without an answer
(SQuAD 2.0's unanswerable ones) are left out before sampling (CMRC 2018 has none). Every
paragraph of the file is ingested into a base of its own (`--kb`, default `answers-<file
name>`; kept, so a second run re-embeds nothing), and each question is answered twice:
`pipeline`, through the whole ask path in that base, and `oracle`, by the answerer alone from
one block holding the question's own paragraph (what the answerer makes of the right evidence,
whatever retrieval found).

Per provider and setting: `contains_reference`, the share of questions whose answer holds the
reference (every span of `answer_contains`; any of the file's human answers); `span_recall`
(vault: the share of spans found); `sentences_held`, the share of the answer's cited sentences
(the text before each marker, cut where quotes.py cuts sentences) that the block they cite holds
verbatim (blanks collapsed, a list item's mark aside; what follows the last marker, such as a
line about missing evidence, cites nothing and is not counted); `supported_markers`, the share of
markers that answering/quotes.py supports; `answered`, the share in mode rag; the mean and
median answer length in characters; and the latency p50/p95 of a whole answer. Matching ignores
case, blanks and Markdown's `*` and backticks. The JSON report goes to stdout; `--details`
adds every answer.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _setup import ROOT, django_setup

PROVIDERS = ("fake", "extractive")
_LEAD = re.compile(r"^(?:[-*+]|\d+[.)])\s+")
_SENTENCE_END = re.compile(r"[。！？!?\n]|\.(?=\s|$)")
_MARKUP = re.compile(r"[*`]")


def normalised(text: str) -> str:
    """`text` for matching: Markdown's emphasis and code marks gone, blanks collapsed, folded."""
    return " ".join(_MARKUP.sub("", text).split()).casefold()


def sentences_held(answer: str, block_texts: Sequence[str]) -> tuple[int, int]:
    """(cited sentences that the block they cite holds verbatim, cited sentences)."""
    from answering.citations import MARKER_PATTERN
    from answering.quotes import terms

    held = total = 0
    start = 0
    blocks = [" ".join(text.split()) for text in block_texts]
    for marker in re.finditer(MARKER_PATTERN, answer):
        numbers = [int(digits) for digits in re.findall(r"\d+", marker.group(0))]
        cited = [blocks[number - 1] for number in numbers if 1 <= number <= len(blocks)]
        for sentence in _SENTENCE_END.split(answer[start:marker.start()]):
            sentence = _LEAD.sub("", sentence.strip()).strip()
            if not terms(sentence):
                continue  # layout: a table's pipes, a list's mark
            total += 1
            held += any(" ".join(sentence.split()) in text for text in cited)
        start = marker.end()
    return held, total


@dataclass
class Tally:
    """What one provider's answers measured, in one setting."""

    contains: list[bool] = field(default_factory=list)
    span_recall: list[float] = field(default_factory=list)
    held: int = 0
    sentences: int = 0
    markers: int = 0
    unsupported: int = 0
    answered: list[bool] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)

    def add(self, *, answer: str, spans: Sequence[str], any_span: bool, block_texts: Sequence[str],
            mode: str, seconds: float) -> dict[str, Any]:
        from answering.citations import MARKER_PATTERN
        from answering.quotes import citations_verify

        text = normalised(answer)
        found = [normalised(span) in text for span in spans]
        contains = any(found) if any_span else all(found)
        held, sentences = sentences_held(answer, block_texts)
        _, unsupported = citations_verify(answer=answer, block_texts=block_texts)
        self.contains.append(contains)
        self.span_recall.append(sum(found) / len(found) if found else 0.0)
        self.held += held
        self.sentences += sentences
        self.markers += len(re.findall(MARKER_PATTERN, answer))
        self.unsupported += unsupported
        self.answered.append(mode == "rag")
        self.lengths.append(len(answer))
        self.seconds.append(seconds)
        return {"mode": mode, "contains_reference": contains, "sentences_held": held,
                "sentences": sentences, "length": len(answer), "answer": answer}

    def summary(self) -> dict[str, Any]:
        count = len(self.contains)
        ordered = sorted(self.seconds)
        return {
            "questions": count,
            "contains_reference": round(sum(self.contains) / count, 4) if count else None,
            "span_recall": round(statistics.fmean(self.span_recall), 4) if count else None,
            "sentences_held": round(self.held / self.sentences, 4) if self.sentences else None,
            "cited_sentences": self.sentences,
            "supported_markers": (round(1 - self.unsupported / self.markers, 4)
                                  if self.markers else None),
            "answered": round(sum(self.answered) / count, 4) if count else None,
            "length_mean": round(statistics.fmean(self.lengths), 1) if count else None,
            "length_median": statistics.median(self.lengths) if count else None,
            "latency_p50_ms": round(statistics.median(ordered) * 1000, 2) if count else None,
            "latency_p95_ms": (round(ordered[int(0.95 * (count - 1))] * 1000, 2)
                               if count else None),
        }


def ask_with(*, question: str, provider: str, base_ids: Sequence[int], max_tokens: int = 0
             ) -> tuple[str, str, list[str], float]:
    """(answer, mode, the blocks' texts, seconds) of the whole ask path with `provider`; a
    model server writes at most `max_tokens` tokens (0: its own limit)."""
    from access.callers import Scope
    from answering.llm import OpenAICompatibleClient
    from answering.services import AnswerRequest, ask_answer, ask_prepare
    from core.config import config_with, get_config

    config = config_with(get_config(), LLM_PROVIDER=provider)
    started = time.perf_counter()
    plan = ask_prepare(AnswerRequest(question=question, scope=Scope.of(base_ids)), config=config)
    if max_tokens and isinstance(plan.client, OpenAICompatibleClient):
        # A small model may repeat itself until its context is full: bound what it writes.
        plan.client.max_tokens = max_tokens
    answer = ask_answer(plan, config=config)
    return answer.answer, answer.mode, plan.block_contents, time.perf_counter() - started


def oracle_with(*, question: str, provider: str, title: str, paragraph: str) -> tuple[str, float]:
    """(answer, seconds) of the answerer alone, given one block holding `paragraph`."""
    from answering.context import block_text
    from answering.llm import get_llm_client
    from answering.prompts import rag_messages
    from core.config import config_with, get_config
    from retrieval.types import SearchHit

    client = get_llm_client(config=config_with(get_config(), LLM_PROVIDER=provider))
    hit = SearchHit(content=paragraph, source=f"{title}.md", relative_path=f"{title}.md",
                    heading_path=[title], heading=title, score=1.0, chunk_index=0,
                    document_id=0)
    messages = rag_messages(question=question, context_text=block_text(hit=hit, number=1))
    started = time.perf_counter()
    answer = client.complete(messages=messages)
    return answer, time.perf_counter() - started


def vault_run(args: argparse.Namespace) -> dict[str, Any]:
    from evaluation.questions import questions_load
    from knowledge.bases import kb_list

    questions = [question for question in questions_load(path=args.questions)
                 if question.answer_contains]
    base_ids = [base.id for base in kb_list(slugs=args.kb or None)]
    tallies = {provider: Tally() for provider in args.providers}
    details = []
    for question in questions:
        row: dict[str, Any] = {"id": question.id, "question": question.question}
        for provider in args.providers:
            answer, mode, blocks, seconds = ask_with(question=question.question,
                                                     provider=provider, base_ids=base_ids,
                                                     max_tokens=args.max_tokens)
            row[provider] = tallies[provider].add(answer=answer, spans=question.answer_contains,
                                                  any_span=False, block_texts=blocks, mode=mode,
                                                  seconds=seconds)
        details.append(row)
    report: dict[str, Any] = {"questions_file": str(args.questions), "asked": len(questions),
                              "pipeline": {provider: tally.summary()
                                           for provider, tally in tallies.items()}}
    if args.details:
        report["details"] = details
    return report


def squad_sample(path: Path, *, questions: int, seed: int) -> list[dict[str, Any]]:
    """The questions tools/squad_to_beir.py samples, each with its paragraph and answers."""
    data = json.loads(path.read_text(encoding="utf-8"))
    asked = []
    for article_index, article in enumerate(data["data"]):
        title = str(article.get("title") or "")
        for index, paragraph in enumerate(article.get("paragraphs", [])):
            paragraph_id = str(paragraph.get("id") or f"{article_index}-{index}")
            for qa in paragraph.get("qas", []):
                answers = [str(answer["text"]) for answer in qa.get("answers", [])
                           if str(answer.get("text") or "").strip()]
                asked.append({"id": str(qa["id"]), "question": qa["question"], "title": title,
                              "paragraph_id": paragraph_id, "paragraph": paragraph["context"],
                              "answers": answers})
    asked = [entry for entry in asked if entry["answers"]]
    asked.sort(key=lambda entry: (entry["id"], entry["question"], entry["paragraph_id"]))
    if questions < len(asked):
        keys = [(entry["id"], entry["question"], entry["paragraph_id"]) for entry in asked]
        chosen = set(random.Random(seed).sample(keys, questions))
        asked = [entry for entry in asked
                 if (entry["id"], entry["question"], entry["paragraph_id"]) in chosen]
    return asked


def squad_base(path: Path, *, slug: str) -> int:
    """Ingest every paragraph of the file into the base `slug` (kept); its id."""
    from core.config import get_config
    from evaluation.beir import BeirCollection, beir_index

    data = json.loads(path.read_text(encoding="utf-8"))
    documents = {}
    for article_index, article in enumerate(data["data"]):
        title = str(article.get("title") or "")
        for index, paragraph in enumerate(article.get("paragraphs", [])):
            paragraph_id = str(paragraph.get("id") or f"{article_index}-{index}")
            documents[paragraph_id] = (title, paragraph["context"])
    collection = BeirCollection(name=path.stem, split="test", documents=documents, queries={},
                                qrels={})
    base, _, result = beir_index(collection=collection, config=get_config(), slug=slug)
    print(f"{slug}: {len(documents)} paragraphs, {result.chunks_written} chunks written",
          file=sys.stderr)
    return base


def squad_run(args: argparse.Namespace) -> dict[str, Any]:
    sample = squad_sample(args.file, questions=args.questions, seed=args.seed)
    base = squad_base(args.file, slug=args.kb or f"answers-{args.file.stem.lower()}"[:40])
    settings = {"pipeline": {provider: Tally() for provider in args.providers},
                "oracle": {provider: Tally() for provider in args.providers}}
    details = []
    for entry in sample:
        row: dict[str, Any] = {"id": entry["id"], "question": entry["question"],
                               "answers": entry["answers"]}
        for provider in args.providers:
            answer, mode, blocks, seconds = ask_with(question=entry["question"],
                                                     provider=provider, base_ids=[base],
                                                     max_tokens=args.max_tokens)
            row[f"pipeline_{provider}"] = settings["pipeline"][provider].add(
                answer=answer, spans=entry["answers"], any_span=True, block_texts=blocks,
                mode=mode, seconds=seconds)
            answer, seconds = oracle_with(question=entry["question"], provider=provider,
                                          title=entry["title"] or entry["paragraph_id"],
                                          paragraph=entry["paragraph"])
            row[f"oracle_{provider}"] = settings["oracle"][provider].add(
                answer=answer, spans=entry["answers"], any_span=True,
                block_texts=[entry["paragraph"]], mode="rag", seconds=seconds)
        details.append(row)
    report: dict[str, Any] = {"file": str(args.file), "seed": args.seed,
                              "sampled": args.questions, "asked": len(sample),
                              **{name: {provider: tally.summary()
                                        for provider, tally in tallies.items()}
                                 for name, tallies in settings.items()}}
    if args.details:
        report["details"] = details
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    vault = commands.add_parser("vault", help="eval/questions.yaml on the ingested sample vault")
    vault.add_argument("--questions", type=Path, default=ROOT / "eval" / "questions.yaml")
    vault.add_argument("--kb", action="append", help="only these bases (default: all)")
    squad = commands.add_parser("squad", help="a SQuAD-style file's sampled questions")
    squad.add_argument("file", type=Path)
    squad.add_argument("--questions", type=int, default=200)
    squad.add_argument("--seed", type=int, default=13)
    squad.add_argument("--kb", help="the base to ingest the paragraphs into")
    for command in (vault, squad):
        command.add_argument("--details", action="store_true", help="every answer too")
        command.add_argument("--providers", nargs="+", default=list(PROVIDERS),
                             choices=[*PROVIDERS, "openai-compatible"],
                             help="the answerers to compare (default: fake extractive)")
        command.add_argument("--max-tokens", type=int, default=0,
                             help="openai-compatible: the most tokens of one answer (0: the "
                                  "server's own limit)")
    args = parser.parse_args()
    django_setup()
    report = vault_run(args) if args.command == "vault" else squad_run(args)
    print(json.dumps(report, ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()
