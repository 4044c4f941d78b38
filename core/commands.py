"""Base class of every local-rag management command: domain errors become exit codes."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand

from core.errors import LocalRagError


class RagCommand(BaseCommand):
    """Thin command: parse, call a service, print. No system or migration checks at start-up,
    so `rag pg start` and `rag db init` work before the database exists."""

    requires_system_checks: list[str] = []
    requires_migrations_checks = False

    def execute(self, *args: Any, **options: Any) -> Any:
        try:
            return super().execute(*args, **options)
        except LocalRagError as exc:
            self.stderr.write(f"error [{exc.code}]: {exc.message}")
            raise SystemExit(exc.exit_code) from None

    def write_json(self, payload: Any) -> None:
        self.stdout.write(json.dumps(payload, ensure_ascii=False, indent=2))
