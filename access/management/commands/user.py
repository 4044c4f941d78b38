"""`rag user create NAME [--email E] [--staff] [--password-stdin]` and `rag user list [--json]`
— the people who sign in to the workbench and own API tokens."""

from __future__ import annotations

import getpass
import sys
from dataclasses import asdict
from typing import Any

from django.core.management.base import CommandParser

from access.people import people_list, user_create
from core.commands import RagCommand
from core.errors import InvalidRequest


class Command(RagCommand):
    help = ("Add a person (a password is generated and shown once unless one is given) or list "
            "the people with their grants. Grants: "
            "`rag grant NAME KB reader|researcher|maintainer`.")

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        create = actions.add_parser("create", help="add a person who can sign in")
        create.add_argument("name")
        create.add_argument("--email", default="")
        create.add_argument("--staff", action="store_true",
                            help="may sign in to the admin (with its permissions)")
        how = create.add_mutually_exclusive_group()
        how.add_argument("--password", action="store_true",
                         help="prompt for the password (typed twice) instead of generating one")
        how.add_argument("--password-stdin", action="store_true",
                         help="read the password from standard input (for scripts)")
        listing = actions.add_parser("list", help="every person with their grants")
        listing.add_argument("--json", action="store_true")

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        if action == "list":
            people = people_list()
            if options["json"]:
                self.write_json([asdict(person) for person in people])
                return
            for person in people:
                kind = "superuser" if person.superuser else "staff" if person.staff else "person"
                grants = ", ".join(f"{slug} ({role})" for slug, role in person.grants.items())
                grants = grants or ("every base" if person.superuser else "no grants")
                state = "" if person.active else " [inactive]"
                self.stdout.write(f"{person.username}  {kind}{state}  {grants}")
            return
        created = user_create(username=options["name"], email=options["email"],
                              staff=options["staff"], password=self._password(options))
        self.stdout.write(f"user {created.username} created")
        if created.generated_password is not None:
            # Alone on its line, so a script can take it; it is not stored anywhere readable.
            self.stdout.write(f"password: {created.generated_password}")
            self.stderr.write("Store the password now: it is not shown again (change it with "
                              f"`rag changepassword {created.username}`).", style_func=str)
        self.stderr.write(f"Next: `rag grant {created.username} KB reader` gives access to a "
                          "knowledge base.", style_func=str)

    def _password(self, options: dict) -> str | None:
        if options["password_stdin"]:
            password = sys.stdin.readline().rstrip("\n")
        elif options["password"]:
            password = getpass.getpass("Password: ")
            if getpass.getpass("Password (again): ") != password:
                raise InvalidRequest("the two passwords differ", details={"field": "password"})
        else:
            return None
        if not password:
            raise InvalidRequest("the password is empty", details={"field": "password"})
        return password
