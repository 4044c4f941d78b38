"""The `rag` console script (and manage.py): global options, config errors, then Django."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, cast

from core.config import ConfigError, env_file_use, get_config
from core.errors import EXIT_BAD_INPUT

# Every command of the product: tests/commands/test_help.py holds it to the registered ones.
USAGE = """usage: rag [--env-file PATH] <command> [options]

commands:
  pg start|stop|status     embedded PostgreSQL + pgvector (no Docker needed)
  pg replica create|start|stop
                           a local streaming replica of the embedded server
  db init                  apply every app's migrations, floor first (idempotent)
  db index [--status] [--drop] [--concurrently]
                           the HNSW vector index of the current embedding model
  config [--json]          print the resolved configuration and where each value came from
  llm use URL|PRESET [--model M] [--key-env VAR|--key-file PATH|--no-key] [--dry-run]
                           try an OpenAI-compatible server (presets: ollama, llamacpp, vllm,
                           lmstudio, openai); if it answers, write it into .env
  llm status [--json]      which model answers now, where its key comes from, whether it is up
  embeddings warmup        load (and on first use download) the local embedding model
  ingest [PATH] [--kb SLUG] [--json]
                           index a vault of notes, PDF, DOCX and TXT (default: VAULT_PATH);
                           --kb SLUG alone: every source of that knowledge base
  watch [PATH] [--kb SLUG] re-index a vault's files as they change, until Ctrl-C
  vault list|forget PATH   the indexed vaults; forget takes one out of the index
  index status|rebuild [--kb SLUG]
                           the search index of each knowledge base (state, lag, size; rebuild)
  kb create|update|add-source|list
                           knowledge bases and their folders
  review list|show|accept|fix|exclude [TASK_ID] [--json]
                           the review queue: OCR pages and tables to check
  user create|list         the people who sign in and own tokens
  grant NAME KB reader|researcher|maintainer
                           give a person a role on a knowledge base
  revoke NAME KB           take a person's role on a knowledge base away
  token create|list|revoke API tokens (the secret is printed once)
  changepassword NAME      set a person's password (e.g. admin's)
  createsuperuser          add an administrator, asking for a name and a password
  ensure_admin             create the admin superuser once, printing its password once
  search "..." [--top-k N] [--kb SLUG] [--json]
  ask "..." [--top-k N] [--kb SLUG] [--fallback] [--json]
  eval [--questions FILE] [--top-k N] [--kb SLUG] [--json]
  conversations eval FILE|prune
                           score follow-up questions; delete old conversations
  traces stats|prune|show ID
                           times and tokens per stage, old traces deleted, one trace in full
  audit [--since WHEN] [--actor WHO] [--action A] [--json] | --prune
                           who changed what, from where, when (the append-only audit log)
  serve [--host H] [--port P] [--no-worker]
  worker [--concurrency N] run background jobs (uploads, deletes, reindexing)
  jobs list|retry|cancel   the background jobs
  mcp [--token T]          MCP server over stdio (desktop clients, editors)
  backup PATH              one archive of the database and the uploaded files
  restore PATH             a `rag backup` archive into an empty database

`rag <command> --help` shows a command's options; docs/cli.md has them all.
Every Django management command works too (e.g. `rag createsuperuser`).
Exit codes: 0 ok, 2 bad input, 3 not ready (database, schema, embeddings, model), 4 LLM error.
"""

# The commands that keep running and whose log lines are their record (what a server's log
# collects). Every other command reports through its own output and its `error [code]` line, so
# the JSON log lines would only repeat that on the terminal (the database being down, say).
SERVICE_COMMANDS = frozenset({"serve", "worker", "watch", "mcp"})


def main(argv: list[str] | None = None) -> None:
    """Entry point of `rag` and manage.py."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--env-file"] or (args and args[0].startswith("--env-file=")):
        if args[0] == "--env-file":
            if len(args) < 2:
                _fail("--env-file needs a PATH")
            path, args = args[1], args[2:]
        else:
            path, args = args[0].split("=", 1)[1], args[1:]
        if not Path(path).expanduser().is_file():
            _fail(f"env file not found: {path}")
        env_file_use(Path(path))
    if not args or args[0] in ("-h", "--help", "help"):
        sys.stdout.write(USAGE)
        return
    try:
        get_config()
    except ConfigError as exc:
        _fail(exc.message, code=exc.code)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "localrag_site.settings")
    import django
    from django.conf import settings
    from django.core.management import execute_from_command_line, get_commands

    if args[0] not in SERVICE_COMMANDS:
        # In the settings, not on the handler: Django configures logging again as it runs the
        # command.
        handlers = cast(dict[str, dict[str, Any]], settings.LOGGING["handlers"])
        handlers["console"]["level"] = "ERROR"
    django.setup()
    if not args[0].startswith("-") and args[0] not in get_commands():
        _fail(f"unknown command {args[0]!r}; run `rag --help` for the list")
    execute_from_command_line(["rag", *args])


def _fail(message: str, *, code: str = "invalid_request") -> None:
    sys.stderr.write(f"error [{code}]: {message}\n")
    raise SystemExit(EXIT_BAD_INPUT)
