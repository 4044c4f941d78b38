"""`rag kb create SLUG [--name TEXT] [--description TEXT] [--source PATH …]
[--outbound local-only|allowed] [--json]`, `rag kb update SLUG [--name] [--description]
[--outbound]`, `rag kb add-source SLUG PATH` and `rag kb list [--json]` — knowledge bases, their
folders and whether their text may leave this machine."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from core.commands import RagCommand
from embeddings.outbound import OUTBOUND_LOCAL_ONLY, OUTBOUND_POLICIES
from knowledge.bases import KnowledgeBaseInfo, kb_create, kb_list, kb_source_add, kb_update

OUTBOUND_HELP = ("whether the base's text may be sent to servers outside this machine (a cloud "
                 "LLM, rerank or embedding server): local-only or allowed")


class Command(RagCommand):
    help = ("Create a knowledge base, register a vault folder as one of its sources, or list "
            "the knowledge bases with their documents, chunks and sources.")

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        create = actions.add_parser("create", help="a new knowledge base")
        create.add_argument("slug", help="lower-case letters, digits, '-' or '_' (e.g. handbook)")
        create.add_argument("--name", help="a human name (default: the slug)")
        create.add_argument("--description", default="")
        create.add_argument("--source", action="append", default=[], metavar="PATH",
                            help="a vault folder of this base (repeat for several)")
        create.add_argument("--outbound", choices=OUTBOUND_POLICIES, default=OUTBOUND_LOCAL_ONLY,
                            help=f"{OUTBOUND_HELP} (default: local-only)")
        create.add_argument("--json", action="store_true", help="print the new base as JSON")
        update = actions.add_parser("update", help="rename a base or change its policy")
        update.add_argument("slug")
        update.add_argument("--name")
        update.add_argument("--description")
        update.add_argument("--outbound", choices=OUTBOUND_POLICIES, help=OUTBOUND_HELP)
        add_source = actions.add_parser("add-source", help="register a vault folder of a base")
        add_source.add_argument("slug")
        add_source.add_argument("path")
        listing = actions.add_parser("list", help="every knowledge base with its counts")
        listing.add_argument("--json", action="store_true", help="print the list as JSON")

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        if action == "create":
            base = kb_create(slug=options["slug"], name=options["name"],
                             description=options["description"], sources=options["source"],
                             outbound=options["outbound"])
            if options["json"]:
                self.write_json(base.as_dict())
                return
            self.stdout.write(f"created knowledge base {base.slug} ({base.name})")
            self._write_sources(base)
            if base.outbound != OUTBOUND_LOCAL_ONLY:
                self.stdout.write(f"  outbound: {base.outbound}")
        elif action == "update":
            base = kb_update(slug=options["slug"], name=options["name"],
                             description=options["description"], outbound=options["outbound"])
            self.stdout.write(f"{base.slug} ({base.name}): outbound {base.outbound}")
        elif action == "add-source":
            path = kb_source_add(slug=options["slug"], path=options["path"])
            # Documents indexed from the folder before (under `default`) moved along with it.
            self.stdout.write(f"{path} is a source of {options['slug']}; ingest it with "
                              f"`rag ingest {path}`")
        else:
            self._list(as_json=options["json"])

    def _list(self, *, as_json: bool) -> None:
        bases = kb_list()
        if as_json:
            self.write_json([base.as_dict() for base in bases])
            return
        for base in bases:
            self.stdout.write(f"{base.slug}  {base.name}  {base.documents} documents, "
                              f"{base.chunks} chunks")
            self._write_sources(base)
            self.stdout.write(f"  outbound: {base.outbound}")

    def _write_sources(self, base: KnowledgeBaseInfo) -> None:
        for source in base.sources:
            self.stdout.write(f"  {source.kind}: {source.path}")
