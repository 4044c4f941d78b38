"""`rag grant NAME KB reader|researcher|maintainer` — give a person a role on a knowledge base."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from access.people import ROLES, grant_set
from core.commands import RagCommand


class Command(RagCommand):
    help = ("Give a person a role on a knowledge base: reader (search and ask), researcher "
            "(also scores, explain, the lab, evaluation and the base's traces) or maintainer "
            "(also upload, delete, reindex). Replaces the role they had there.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="the person (rag user list)")
        parser.add_argument("kb", help="the knowledge base's slug (rag kb list)")
        parser.add_argument("role", choices=ROLES)

    def handle(self, *args: Any, name: str, kb: str, role: str, **options: Any) -> None:
        previous, changed = grant_set(username=name, slug=kb, role=role)
        if not changed:
            self.stdout.write(f"{name} is {role} on {kb} already")
        elif previous:
            self.stdout.write(f"{name} is now {role} on {kb} (was {previous})")
        else:
            self.stdout.write(f"{name} is now {role} on {kb}")
