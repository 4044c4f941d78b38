"""`rag mcp`'s stdio transport: the SDK's, with the lines it cannot take answered instead of
dropped.

A JSON line may spell a lone UTF-16 surrogate (`"query": "a\\ud800"`). The SDK's JSON parser
refuses it and its server then says nothing, so the client waits for a reply that never comes.
Each line is read here first: one whose text holds a lone surrogate gets a JSON-RPC error that
names the field (core/text_input.py), the way the HTTP API answers 422, and never reaches the
SDK. Every other line goes on unchanged."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from io import TextIOWrapper
from typing import Any, cast

import anyio
import mcp_types as types
from mcp.server import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from core.text_input import lone_surrogate_field, lone_surrogate_refusal


class _CheckedLines:
    """stdin's lines for the SDK's reader, less those answered here."""

    def __init__(self, source: anyio.AsyncFile[str]) -> None:
        self.source = source
        self.replies: anyio.abc.ObjectSendStream[SessionMessage] | None = None

    async def __aiter__(self) -> AsyncIterator[str]:
        async for line in self.source:
            refusal = _refusal(line)
            if refusal is None or self.replies is None:
                yield line
            else:
                await self.replies.send(SessionMessage(refusal))


def _refusal(line: str) -> types.JSONRPCError | None:
    """The error reply to a request whose text holds a lone surrogate; None for any other line
    (the SDK answers malformed JSON and everything else itself)."""
    if "\\u" not in line:
        return None  # no escape: decoded UTF-8 cannot hold a lone surrogate
    try:
        message: Any = json.loads(line)
    except ValueError:
        return None
    if not isinstance(message, dict):
        return None
    field = lone_surrogate_field(message.get("params"), root="params")
    if field is None:
        return None
    request_id = message.get("id")
    if not isinstance(request_id, (str, int)) or lone_surrogate_field(request_id) is not None:
        request_id = None
    error = lone_surrogate_refusal(field)
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(
        code=types.INVALID_PARAMS, message=error.message, data=error.as_body()))


async def stdio_serve(server: MCPServer) -> None:
    """Serve `server` over stdin and stdout, as MCPServer.run("stdio") does."""
    stdin = anyio.wrap_file(TextIOWrapper(sys.stdin.buffer, encoding="utf-8",
                                          errors="replace"))
    lines = _CheckedLines(stdin)
    async with stdio_server(stdin=cast(anyio.AsyncFile[str], lines)) as (read, write):
        lines.replies = write
        lowlevel = server._lowlevel_server  # noqa: SLF001 - what run_stdio_async runs
        await lowlevel.run(read, write, lowlevel.create_initialization_options())
