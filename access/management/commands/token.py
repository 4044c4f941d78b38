"""`rag token create --user NAME [--kb SLUG …] [--read-only] [--name TEXT] [--json]`,
`rag token list [--json]` and `rag token revoke ID` — API tokens of the service's users."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.core.management.base import CommandParser

from access.api_tokens import token_create, token_revoke, tokens_list
from core.commands import RagCommand


class Command(RagCommand):
    help = ("Issue an API token to a user (the token is printed once and stored only as a "
            "hash), list the tokens, or revoke one.")

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        create = actions.add_parser("create", help="issue a token; it is shown only this once")
        create.add_argument("--user", required=True, help="the user it acts for")
        create.add_argument("--kb", action="append", default=[], metavar="SLUG",
                            help="narrow it to this knowledge base (repeat for several; "
                                 "default: every base the user has a grant on)")
        create.add_argument("--read-only", action="store_true",
                            help="no upload, delete or reindex, even where the user is a "
                                 "maintainer (a researcher's rights stay: they only read)")
        create.add_argument("--name", default="", help="what it is for, e.g. 'laptop'")
        create.add_argument("--json", action="store_true")
        listing = actions.add_parser("list", help="every token, without its secret")
        listing.add_argument("--json", action="store_true")
        revoke = actions.add_parser("revoke", help="stop a token from working, at once")
        revoke.add_argument("id", type=int)

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        if action == "create":
            self._create(options)
        elif action == "list":
            self._list(as_json=options["json"])
        else:
            token_revoke(token_id=options["id"])
            self.stdout.write(f"token {options['id']} revoked; it is refused from now on")

    def _create(self, options: dict) -> None:
        slugs = sorted(set(options["kb"]))
        issued = token_create(username=options["user"], slugs=slugs,
                              read_only=options["read_only"], name=options["name"])
        if options["json"]:
            self.write_json({"id": issued.id, "token": issued.secret, "prefix": issued.prefix,
                             "user": options["user"], "knowledge_bases": slugs,
                             "read_only": options["read_only"]})
            return
        # The token alone on stdout, so `TOKEN=$(rag token create …)` captures just it; the
        # note goes to stderr, uncoloured: it is no error.
        self.stdout.write(issued.secret)
        bases = ", ".join(slugs) or "every knowledge base the user has a grant on"
        access = "read-only" if options["read_only"] else "the user's roles"
        self.stderr.write(
            f"token {issued.id} for {options['user']} ({bases}; {access}). Store it now: it is "
            f"not shown again, only its hash is kept (revoke it with `rag token revoke "
            f"{issued.id}`).", style_func=str)

    def _list(self, *, as_json: bool) -> None:
        tokens = tokens_list()
        if as_json:
            self.write_json([{key: _iso(value) for key, value in token.items()}
                             for token in tokens])
            return
        if not tokens:
            self.stdout.write("no token issued yet; issue one with `rag token create --user NAME`")
            return
        rows = [("ID", "TOKEN", "NAME", "USER", "KNOWLEDGE BASES", "ACCESS", "CREATED (UTC)",
                 "LAST USED (UTC)", "STATUS")]
        for token in tokens:
            # A token of no base acts on every one its user has a grant on (all, a superuser's).
            rows.append((str(token["id"]), f"{token['prefix']}…", token["name"] or "-",
                         token["user"], ", ".join(token["knowledge_bases"]) or "all of the user's",
                         "read-only" if token["read_only"] else "the user's roles",
                         _when(token["created_at"]), _when(token["last_used_at"]),
                         f"revoked {_when(token['revoked_at'])}" if token["revoked_at"]
                         else "active"))
        widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
        for row in rows:
            self.stdout.write("  ".join(cell.ljust(width)
                                        for cell, width in zip(row, widths)).rstrip())


def _iso(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def _when(value: datetime | None) -> str:
    return f"{value.astimezone(UTC):%Y-%m-%d %H:%M}" if value else "never"
