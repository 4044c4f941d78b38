"""`rag kb create SLUG [--name TEXT] [--description TEXT] [--source PATH …] [--json]`,
`rag kb add-source SLUG PATH` and `rag kb list [--json]` — knowledge bases and their folders."""

from __future__ import annotations

from core.commands import RagCommand
from knowledge.bases import KnowledgeBaseInfo, kb_create, kb_list, kb_source_add


class Command(RagCommand):
    help = ("Create a knowledge base, register a vault folder as one of its sources, or list "
            "the knowledge bases with their documents, chunks and sources.")

    def add_arguments(self, parser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        create = actions.add_parser("create", help="a new knowledge base")
        create.add_argument("slug", help="lower-case letters, digits, '-' or '_' (e.g. handbook)")
        create.add_argument("--name", help="a human name (default: the slug)")
        create.add_argument("--description", default="")
        create.add_argument("--source", action="append", default=[], metavar="PATH",
                            help="a vault folder of this base (repeat for several)")
        create.add_argument("--json", action="store_true", help="print the new base as JSON")
        add_source = actions.add_parser("add-source", help="register a vault folder of a base")
        add_source.add_argument("slug")
        add_source.add_argument("path")
        listing = actions.add_parser("list", help="every knowledge base with its counts")
        listing.add_argument("--json", action="store_true", help="print the list as JSON")

    def handle(self, *args, action: str, **options) -> None:
        if action == "create":
            base = kb_create(slug=options["slug"], name=options["name"],
                             description=options["description"], sources=options["source"])
            if options["json"]:
                self.write_json(base.as_dict())
                return
            self.stdout.write(f"created knowledge base {base.slug} ({base.name})")
            self._write_sources(base)
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

    def _write_sources(self, base: KnowledgeBaseInfo) -> None:
        for source in base.sources:
            self.stdout.write(f"  {source.kind}: {source.path}")
