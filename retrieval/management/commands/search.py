"""`rag search "..." [--top-k N] [--json]` — the same service as POST /search, no server needed."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from access.callers import OPERATOR
from core.commands import RagCommand
from core.config import get_config
from core.output import body_json, citation_line
from retrieval.api_schemas import SearchResponse, search_body
from retrieval.filters import filters_from_json
from retrieval.services import search
from retrieval.types import RetrievalRequest
from traces.recording import trace_record, traced


class Command(RagCommand):
    help = "Search the knowledge base; prints ranked chunks with their scores."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("query")
        parser.add_argument("--top-k", type=int, default=None, help="1..20 (default RAG_TOP_K)")
        parser.add_argument("--json", action="store_true", help="print the HTTP response body")
        parser.add_argument("--explain", action="store_true",
                            help="show each stage's ranks, scores and time")
        parser.add_argument("--kb", action="append", default=None, metavar="SLUG",
                            help="only these knowledge bases (repeatable; default: all)")
        parser.add_argument("--filters", default=None, metavar="JSON",
                            help='only matching documents, as the API\'s `filters`: e.g. '
                                 '\'{"frontmatter": {"year": 2021}, "folder": "reports/"}\'')

    def handle(self, *args: Any, query: str, top_k: int | None, **options: Any) -> None:
        with traced(operation="search", channel="cli", caller=OPERATOR) as trace:
            outcome = search(RetrievalRequest(
                query=query, scope=OPERATOR.scope(slugs=options["kb"]), top_k=top_k,
                explain=options["explain"], filters=filters_from_json(options["filters"])),
                config=get_config())
            trace_record(trace, outcome.measures)
            body = search_body(outcome, trace_id=trace.id)
        body = SearchResponse.model_validate(body).model_dump(exclude_unset=True)
        if options["json"]:
            self.stdout.write(body_json(body))
            return
        self.stdout.write(f"confidence: {body['confidence']:.4f}")
        for number, result in enumerate(body["results"], start=1):
            self.stdout.write(citation_line(number, result))
            snippet = " ".join(result["content"].split())[:160]
            self.stdout.write(f"    {snippet}")
        if not body["results"]:
            self.stdout.write("no results")
        if "explain" in body:
            self._explain(body["explain"])

    def _explain(self, explain: dict) -> None:
        parameters = ", ".join(f"{name}={value}" for name, value in explain["parameters"].items())
        timings = ", ".join(f"{stage} {ms:.1f} ms" for stage, ms in explain["timings_ms"].items())
        self.stdout.write(f"\nmode {explain['mode']} ({parameters})\ntime: {timings}")
        if explain.get("rerank"):
            rerank = explain["rerank"]
            failure = rerank.get("failure")
            self.stdout.write(f"rerank {rerank['provider']}: "
                              + (f"failed ({failure['code']}), fused order kept" if failure
                                 else "applied" if rerank["applied"] else "not applied"))
        self.stdout.write(f"{'#':>3} {'vector':>7} {'cosine':>7} {'lexical':>8} {'bm25':>8} "
                          f"{'fused':>6} {'rerank':>7} {'score':>7}")
        for number, row in enumerate(explain["results"], start=1):
            cells = [_cell(row["vector_rank"]), _cell(row["cosine"]), _cell(row["lexical_rank"]),
                     _cell(row["bm25"]), _cell(row["fused_rank"]), _cell(row["rerank_rank"]),
                     _cell(row["rerank_score"])]
            self.stdout.write(f"{number:>3} {cells[0]:>7} {cells[1]:>7} {cells[2]:>8} "
                              f"{cells[3]:>8} {cells[4]:>6} {cells[5]:>7} {cells[6]:>7}")


def _cell(value: object) -> str:
    if value is None:
        return "-"
    return f"{value:.4f}" if isinstance(value, float) else str(value)
