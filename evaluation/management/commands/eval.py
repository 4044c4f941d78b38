"""`rag eval [--questions eval/questions.yaml] [--top-k 5] [--json] [--ablation]`, and
`rag eval --beir PATH [--split test] [--kb SLUG] [--max-queries N] [--json]`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import CommandParser

from access.callers import OPERATOR
from core.commands import RagCommand
from core.config import Config, get_config
from core.errors import EXIT_FAILURE, InvalidRequest
from core.output import body_json
from evaluation.ablation import ablation_run
from evaluation.beir import beir_evaluate
from evaluation.questions import evaluate, questions_load
from retrieval.services import top_k_validate


class Command(RagCommand):
    help = "Score retrieval and the answer mode on the evaluation questions; exit 1 on a miss."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--questions", default=None,
                            help="YAML file (default: eval/questions.yaml in the project)")
        parser.add_argument("--top-k", type=int, default=5)
        parser.add_argument("--json", action="store_true")
        parser.add_argument("--ablation", action="store_true",
                            help="score the questions under vector, lexical, hybrid and hybrid "
                                 "with each available reranker, in one table")
        parser.add_argument("--kb", action="append", default=None, metavar="SLUG",
                            help="only these knowledge bases (repeatable; default: all); with "
                                 "--beir, the one base to ingest into and keep")
        parser.add_argument("--beir", default=None, metavar="PATH",
                            help="score a BEIR-format folder (corpus.jsonl, queries.jsonl, "
                                 "qrels/<split>.tsv) ingested into a throw-away knowledge base")
        parser.add_argument("--split", default="test", help="--beir: the qrels split to score")
        parser.add_argument("--max-queries", type=int, default=None, metavar="N",
                            help="--beir: score only the first N judged queries (by id)")
        parser.add_argument("--no-reference", action="store_true",
                            help="--beir: leave out the reference BM25 row")

    def handle(self, *args: Any, questions: str | None, top_k: int, **options: Any) -> None:
        config = get_config()
        if options["beir"]:
            self._beir(config, options)
            return
        path = (Path(questions) if questions
                else (config.project_root or Path.cwd()) / "eval" / "questions.yaml")
        if options["ablation"]:
            report = ablation_run(questions=questions_load(path=path), config=config,
                                  scope=OPERATOR.scope(slugs=options["kb"]))
            if options["json"]:
                self.stdout.write(body_json(report))
            else:
                self._print_ablation(report)
            return
        report = evaluate(questions=questions_load(path=path),
                          top_k=top_k_validate(top_k, config=config), config=config,
                          scope=OPERATOR.scope(slugs=options["kb"]))
        if options["json"]:
            self.stdout.write(body_json(report))
        else:
            self._print(report)
        if report["summary"]["failed"]:
            raise SystemExit(EXIT_FAILURE)

    def _beir(self, config: Config, options: dict) -> None:
        if options["kb"] and len(options["kb"]) > 1:
            raise InvalidRequest("--beir takes one --kb (the base to ingest into)")
        if options["max_queries"] is not None and options["max_queries"] < 1:
            raise InvalidRequest("--max-queries must be at least 1")
        report = beir_evaluate(path=Path(options["beir"]), split=options["split"], config=config,
                               knowledge_base=options["kb"][0] if options["kb"] else None,
                               max_queries=options["max_queries"],
                               reference=not options["no_reference"],
                               progress=lambda line: self.stderr.write(line))
        if options["json"]:
            self.stdout.write(body_json(report))
            return
        self.stdout.write(f"{report['collection']} ({report['split']}): {report['documents']} "
                          f"documents, {report['queries']} judged queries, "
                          f"{report['chunks_written']} chunks written; provider "
                          f"{report['embedding_provider']} / {report['embedding_model']}\n")
        names = ("ndcg_at_10", "recall_at_10", "recall_at_100", "mrr_at_10", "hit_at_1",
                 "latency_p50_ms", "latency_p95_ms")
        self.stdout.write(f"{'row':<28} " + " ".join(f"{name:>9}" for name in (
            "nDCG@10", "R@10", "R@100", "MRR@10", "hit@1", "p50 ms", "p95 ms")))
        for row in report["rows"]:
            if "unavailable" in row:
                self.stdout.write(f"{row['row']:<28} {row['unavailable']}")
                continue
            cells = [row[name] for name in names]
            self.stdout.write(f"{row['row']:<28} " + " ".join(
                f"{cell:>9.4f}" if isinstance(cell, float) and name[0] != "l" else
                f"{cell:>9.1f}" if isinstance(cell, float) else f"{'n/a':>9}"
                for name, cell in zip(names, cells, strict=True)))

    def _print_ablation(self, report: dict) -> None:
        self.stdout.write(f"provider {report['embedding_provider']} / {report['embedding_model']}"
                          f", threshold {report['threshold']:.2f} ({report['threshold_origin']}),"
                          f" {report['questions']} questions, corpus {report['corpus_hash']}\n")
        columns = ("hit_at_1", "hit_at_5", "mrr", "ndcg_at_10", "refusal_precision",
                   "refusal_recall", "p50_ms")
        self.stdout.write(f"{'retrieval':<10} {'rerank':<18} " + " ".join(
            f"{name:>17}" for name in ("Hit@1", "Hit@5", "MRR", "nDCG@10", "refusal P",
                                       "refusal R", "p50 ms")) + "  config")
        for row in report["rows"]:
            cells = [row[name] for name in columns]
            shown = [f"{cell:>17.4f}" if isinstance(cell, float) else f"{'n/a':>17}"
                     for cell in cells]
            by_kind = ", ".join(f"{kind} {value:.2f}"
                                for kind, value in row["hit_at_1_by_kind"].items())
            self.stdout.write(f"{row['retrieval']:<10} {row['rerank']:<18} " + " ".join(shown)
                              + f"  {row['config_hash']}"
                              + (f"  (Hit@1 by kind: {by_kind})" if by_kind else ""))

    def _print(self, report: dict) -> None:
        summary = report["summary"]
        self.stdout.write(f"provider {report['embedding_provider']} / {report['embedding_model']}"
                          f", threshold {report['threshold']:.2f} ({report['threshold_origin']}),"
                          f" refusal {report['refusal']}, top_k {report['top_k']}\n")
        # The page column and page scores appear only when some question has expected_pages.
        paged = summary["page_questions"] > 0
        self.stdout.write(f"{'id':<6} {'expected':<10} {'mode':<10} {'conf':>7} {'rank':>5}"
                          + (f" {'page':>5}" if paged else "") + "  question")
        for row in report["questions"]:
            rank = row["hit_rank"] if row["hit_rank"] is not None else "-"
            page = (row["page_hit_rank"] if row["page_hit_rank"] is not None
                    else "-" if row["expected_pages"] else "")
            mark = "" if row["passed"] else "  <-- FAIL"
            self.stdout.write(f"{row['id']:<6} {row['expected_mode']:<10} {row['mode']:<10} "
                              f"{row['confidence']:>7.4f} {rank:>5}"
                              + (f" {page:>5}" if paged else "")
                              + f"  {row['question']}{mark}")
        self.stdout.write("")
        page_keys = ("page_hit_at_1", "page_hit_at_k") if paged else ()
        for key in ("hit_at_1", "hit_at_5", "mrr", *page_keys, "mode_accuracy",
                    "no_answer_precision", "no_answer_recall", "lowest_in_domain_confidence",
                    "highest_out_of_domain_confidence", "calibration_margin"):
            value = summary[key]
            self.stdout.write(f"{key:<34} {value:.4f}" if value is not None else f"{key:<34} n/a")
        self.stdout.write(f"\n{'threshold':>9} {'mode acc':>9} {'refusal P':>10} {'refusal R':>10}")
        for row in report["thresholds"]["rows"]:
            cells = [row["mode_accuracy"], row["no_answer_precision"], row["no_answer_recall"]]
            shown = [f"{c:.2f}" if c is not None else "n/a" for c in cells]
            self.stdout.write(f"{row['threshold']:>9.2f} {shown[0]:>9} {shown[1]:>10}"
                              f" {shown[2]:>10}")
        suggestion = report["thresholds"]
        self.stdout.write(f"\nsuggested threshold: {suggestion['suggested']}"
                          f" ({suggestion['reason']}); set RAG_MIN_SIMILARITY to use it")
        self.stdout.write(f"\n{summary['passed']}/{summary['questions']} questions passed"
                          + (f"; failed: {', '.join(summary['failed'])}" if summary["failed"]
                             else ""))
