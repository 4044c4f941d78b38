"""`rag revoke NAME KB` — take away a person's grant on a knowledge base."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from access.people import grant_remove
from core.commands import RagCommand


class Command(RagCommand):
    help = ("Take away a person's role on a knowledge base; their tokens lose it at once. "
            "(To stop a token, `rag token revoke ID`.)")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("kb")

    def handle(self, *args: Any, name: str, kb: str, **options: Any) -> None:
        role = grant_remove(username=name, slug=kb)
        self.stdout.write(f"{name} is no longer {role} on {kb}")
