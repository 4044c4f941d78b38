"""Schema initialisation: `rag db init` is the only thing that creates tables or extensions."""

from __future__ import annotations

from pathlib import Path

from django.core.management import call_command
from django.db import connection

from knowledge.db import translate_db_errors

SCHEMA_FILE = Path(__file__).resolve().parent / "schema.sql"


def db_init(*, verbosity: int = 0) -> None:
    """Apply schema.sql (idempotent) and then Django's own migrations."""
    schema = SCHEMA_FILE.read_text(encoding="utf-8")
    with translate_db_errors():
        with connection.cursor() as cursor:
            cursor.execute(schema)
        call_command("migrate", interactive=False, verbosity=verbosity)
