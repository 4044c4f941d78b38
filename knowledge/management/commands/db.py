"""`rag db init` — apply knowledge/schema.sql and Django's migrations."""

from __future__ import annotations

from core.commands import RagCommand
from knowledge.schema import db_init


class Command(RagCommand):
    help = "Initialise the database: schema.sql (idempotent), then Django's migrations."

    def add_arguments(self, parser) -> None:
        parser.add_argument("action", choices=["init"])

    def handle(self, *args, action: str, **options) -> None:
        db_init(verbosity=max(0, options["verbosity"] - 1))
        self.stdout.write("schema ready (knowledge/schema.sql applied, migrations up to date)")
