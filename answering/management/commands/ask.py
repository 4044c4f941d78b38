"""`rag ask "..." [--top-k N] [--fallback] [--json]` — the same service as POST /ask."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from access.callers import OPERATOR
from answering.api_schemas import ask_body
from answering.services import AnswerRequest, ask
from core.commands import RagCommand
from core.config import get_config
from core.output import body_json, citation_line
from retrieval.filters import filters_from_json
from traces.recording import trace_record, traced


class Command(RagCommand):
    help = "Ask the knowledge base; prints the mode, confidence, answer and citations."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("question")
        parser.add_argument("--top-k", type=int, default=None, help="1..20 (default RAG_TOP_K)")
        parser.add_argument("--fallback", action="store_true",
                            help="allow a general-knowledge answer below the threshold "
                                 "(only if RAG_FALLBACK_ENABLED=true)")
        parser.add_argument("--json", action="store_true", help="print the HTTP response body")
        parser.add_argument("--kb", action="append", default=None, metavar="SLUG",
                            help="only these knowledge bases (repeatable; default: all)")
        parser.add_argument("--filters", default=None, metavar="JSON",
                            help='only matching documents, as the API\'s `filters`: e.g. '
                                 '\'{"frontmatter": {"year": 2021}, "folder": "reports/"}\'')

    def handle(self, *args: Any, question: str, top_k: int | None, fallback: bool,
               **options: Any) -> None:
        with traced(operation="ask", channel="cli", caller=OPERATOR) as trace:
            answer = ask(AnswerRequest(question=question, scope=OPERATOR.scope(slugs=options["kb"]),
                                       top_k=top_k, fallback=fallback,
                                       filters=filters_from_json(options["filters"]),
                                       trace=trace.ref()),
                         config=get_config())
            trace_record(trace, *answer.measures)
        body = ask_body(answer, trace_id=trace.id)
        if options["json"]:
            self.stdout.write(body_json(body))
            return
        self.stdout.write(f"mode: {body['mode']}\nconfidence: {body['confidence']:.4f}\n")
        self.stdout.write(body["answer"])
        if body["citations"]:
            self.stdout.write("\ncitations:")
            for number, citation in enumerate(body["citations"], start=1):
                self.stdout.write(citation_line(number, citation))
        if body["invalid_citations_removed"]:
            self.stdout.write(f"({body['invalid_citations_removed']} invalid citation markers "
                              "removed)")
