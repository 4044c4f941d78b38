"""`rag mcp [--token TOKEN]` — the MCP server over stdio, for desktop clients and editors."""

from __future__ import annotations

import logging.config
from typing import Any

import anyio
from django.core.management.base import CommandParser
from django.db import connections

from conversations.mcp_server import mcp_caller, mcp_server_build
from conversations.mcp_stdio import stdio_serve
from core.commands import RagCommand
from core.config import get_config

TOKEN_VARIABLE = "RAG_MCP_TOKEN"  # usually set in the MCP client's `env` for this server


class Command(RagCommand):
    help = ("Serve the knowledge bases to an MCP client over stdin/stdout (search, ask, "
            "list_knowledge_bases, get_document, get_chunk).")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--token", default=None,
                            help=f"act as this API token (default: ${TOKEN_VARIABLE}; without "
                                 "one, as the local operator, who reads every knowledge base)")

    def handle(self, *args: Any, token: str | None, **options: Any) -> None:
        # Empty counts as unset, as everywhere in the configuration.
        secret = (token if token is not None else get_config().rag_mcp_token).strip()
        caller = mcp_caller(secret=secret or None, config=get_config())
        # Checked now so a bad token fails before serving; the main thread then holds no
        # connection while it waits on the client (each tool call opens its own).
        connections.close_all()
        # stderr only: stdout is the protocol.
        if secret:
            self.stderr.write(f"rag mcp: serving as {caller.label}")
        else:
            self.stderr.write(f"rag mcp: no token (--token or {TOKEN_VARIABLE}): serving as the "
                              "local operator, who reads every knowledge base")
        server = mcp_server_build(secret=secret or None)
        # The SDK gives the root logger a stderr handler; the project's loggers have their
        # own (settings.LOGGING), so without this each of their lines would appear twice.
        logging.config.dictConfig({"version": 1, "incremental": True,
                                   "loggers": {"localrag": {"propagate": False}}})
        try:
            anyio.run(stdio_serve, server)
        except KeyboardInterrupt:
            pass
