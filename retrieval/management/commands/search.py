"""`rag search "..." [--top-k N] [--json]` — the same service as POST /search, no server needed."""

from __future__ import annotations

from core.commands import RagCommand
from core.config import get_config
from core.output import body_json, citation_line
from retrieval.schemas import SearchResponse
from retrieval.services import search


class Command(RagCommand):
    help = "Search the knowledge base; prints ranked chunks with their scores."

    def add_arguments(self, parser) -> None:
        parser.add_argument("query")
        parser.add_argument("--top-k", type=int, default=None, help="1..20 (default RAG_TOP_K)")
        parser.add_argument("--json", action="store_true", help="print the HTTP response body")

    def handle(self, *args, query: str, top_k: int | None, **options) -> None:
        outcome = search(query=query, top_k=top_k, config=get_config())
        body = SearchResponse.model_validate(outcome, from_attributes=True).model_dump()
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
