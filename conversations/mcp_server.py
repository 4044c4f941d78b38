"""`rag mcp`: a Model Context Protocol server over stdio (the official `mcp` SDK, 2.x). It lives
beside the conversations it can ask in.

Each tool calls the same service as its HTTP endpoint and returns the body that endpoint sends,
checked against the same response schema, as JSON text (and as structured content): a client
sees nothing here that the API would not show it, and nothing else. Arguments are checked by
the API's request schemas, and a domain error comes back as a tool error (`isError`) whose text
is the unified error body.

The SDK runs a plain (sync) tool function on a worker thread, where Django gives it its own
database connection; each call closes that connection when it is done, because the SDK retires
idle worker threads and a connection left on one would only be closed by the garbage collector.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from importlib.metadata import version as package_version
from typing import Annotated, Any

from django.db import connections
from mcp.server import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from ninja import Schema
from pydantic import Field, ValidationError

from access.callers import OPERATOR, Caller, caller_for_secret
from answering.api_schemas import AskRequest, AskResponse, ask_body
from answering.services import AnswerRequest, ask
from conversations.api_schemas import (
    ConversationOut,
    ConversationSummary,
    TurnResponse,
    turn_body,
)
from conversations.selectors import conversation_dict, conversation_summary
from conversations.services import (
    conversation_create,
    conversation_first_turn,
    conversation_get,
    conversations_list,
    turn_answer,
    turn_prepare,
)
from core.config import Config, get_config
from core.errors import LocalRagError, Unauthorized, error_body, invalid_request_of
from core.output import body_json
from core.text_input import lone_surrogate_check
from knowledge.api_schemas import DocumentOut, KnowledgeBaseOut
from knowledge.documents import document_get
from knowledge.selectors import chunk_get, kb_list_visible
from retrieval.api_schemas import (
    SearchRequest,
    SearchResponse,
    filters_checked,
    filters_plain,
    search_body,
)
from retrieval.services import explain_check, search
from retrieval.types import RetrievalRequest
from traces.recording import Trace, trace_record, traced

logger = logging.getLogger("localrag.mcp")

INSTRUCTIONS = (
    "local-rag answers from the operator's own documents (notes, PDF, DOCX, TXT) in knowledge "
    "bases. `ask` answers a question with citations (mode rag), or says it has no answer "
    "(no_answer); `search` returns the ranked chunks. Results name their document "
    "(`get_document`) and carry their chunk_id (`get_chunk`). `list_knowledge_bases` names "
    "the bases these tools may be narrowed to. "
    "For follow-up questions, `ask` with new_conversation=true starts a conversation and "
    "answers with its conversation_id; `ask` with that conversation_id then understands a "
    "follow-up (\"那 P2 呢？\", \"what about it?\") from the earlier turns. "
    "`list_conversations` and `get_conversation` read them back.")
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False)

TopK = Annotated[int | None, Field(description="how many chunks, 1..20 (default RAG_TOP_K)")]
KnowledgeBaseSlugs = Annotated[list[str] | None, Field(
    description="only these knowledge bases (slugs from list_knowledge_bases; default: all "
                "this server may read)")]
Explain = Annotated[bool, Field(description="add each stage's ranks, scores and time (needs "
                                            "the researcher role on every base searched)")]
DocumentId = Annotated[int, Field(description="the document_id of a search result or citation")]
ChunkId = Annotated[int, Field(description="the chunk_id of a search result")]
ConversationId = Annotated[int | None, Field(
    description="ask within this conversation (from new_conversation or list_conversations): "
                "a follow-up is understood from its earlier turns")]
Filters = Annotated[dict[str, Any] | None, Field(
    description="only documents matching these (every key narrows): frontmatter "
                "{field: value | [one of] | {gte, gt, lte, lt, eq, in}}, tags [all of], "
                "tags_any, format [markdown|pdf|docx|txt], folder (path prefix), title "
                "(substring), ingested / updated {gte, lt: ISO date}; e.g. "
                '{"frontmatter": {"year": {"gte": 2019}, "region": "Yunnan"}, '
                '"folder": "reports/"}')]
NewConversation = Annotated[bool, Field(
    description="start a conversation with this question; the answer carries its "
                "conversation_id for the follow-ups")]


class ChunkOut(Schema):
    id: int
    knowledge_base: str
    document_id: int
    chunk_index: int
    source: str  # the document's relative path, as in /search results
    heading_path: list[str]
    # The PDF pages the text comes from (1-based); null for notes, DOCX and TXT.
    page_start: int | None
    page_end: int | None
    content: str


def mcp_caller(*, secret: str | None, config: Config) -> Caller:
    """Whom the server acts for: the API token `secret` (its user's grants, narrowed as the
    token is), or the local operator when there is none."""
    if secret is None:
        return OPERATOR
    caller = caller_for_secret(secret, config=config)
    if caller is None:
        raise Unauthorized("the MCP token is unknown, revoked or malformed: pass a token from "
                           "`rag token create` (or RAG_API_TOKEN) with --token or "
                           "RAG_MCP_TOKEN")
    return caller


def mcp_server_build(*, secret: str | None) -> MCPServer:
    """The server with its tools, acting for `secret` (see `mcp_caller`): all read-only but
    `ask`, which stores a conversation's turns when it is asked in one."""
    server = MCPServer("local-rag", instructions=INSTRUCTIONS,
                       version=package_version("local-rag"))

    def caller() -> Caller:
        # Resolved on every call, as the API does per request: a revoked token stops at once.
        return mcp_caller(secret=secret, config=get_config())

    @server.tool(name="search", annotations=READ_ONLY)
    def search_tool(query: str, top_k: TopK = None, knowledge_bases: KnowledgeBaseSlugs = None,
                    explain: Explain = False, filters: Filters = None
                    ) -> Annotated[CallToolResult, SearchResponse]:
        """Ranked chunks for a query, with a confidence: the body of POST /search."""
        def body() -> dict[str, Any]:
            request = _request(SearchRequest, query=query, top_k=top_k,
                               knowledge_bases=knowledge_bases, explain=explain,
                               filters=filters)
            current = caller()
            # Under a trace of channel `mcp`: its id is in the body.
            with traced(operation="search", channel="mcp", caller=current) as trace:
                scope = current.scope(slugs=request.knowledge_bases)
                if request.explain:
                    explain_check(caller=current, scope=scope)
                outcome = search(RetrievalRequest(
                    query=request.query, scope=scope,
                    top_k=request.top_k, explain=request.explain,
                    filters=filters_checked(request.filters)), config=get_config())
                trace_record(trace, outcome.measures)
                # exclude_unset, as the endpoint: `explain` only when it was asked for.
                return SearchResponse.model_validate(search_body(
                    outcome, trace_id=trace.id)).model_dump(exclude_unset=True)
        return _tool_result(body)

    @server.tool(name="ask")
    def ask_tool(question: str, top_k: TopK = None, knowledge_bases: KnowledgeBaseSlugs = None,
                 fallback: bool = False, conversation_id: ConversationId = None,
                 new_conversation: NewConversation = False, filters: Filters = None
                 ) -> Annotated[CallToolResult, AskResponse]:
        """An answer from the knowledge bases with citations, or no_answer when they do not
        hold one: the body of POST /ask. fallback=true allows a general-knowledge answer
        (mode fallback) if the server enables it. In a conversation (conversation_id, or
        new_conversation=true) the body of POST /conversations/{id}/messages: also the
        conversation_id, message ids and the standalone query that was searched."""
        def body() -> dict[str, Any]:
            request = _request(AskRequest, question=question, top_k=top_k,
                               knowledge_bases=knowledge_bases, fallback=fallback,
                               filters=filters)
            current = caller()
            with traced(operation="ask", channel="mcp", caller=current) as trace:
                if conversation_id is None and not new_conversation:
                    answer = ask(AnswerRequest(
                        question=request.question,
                        scope=current.scope(slugs=request.knowledge_bases), top_k=request.top_k,
                        fallback=request.fallback, filters=filters_checked(request.filters),
                        trace=trace.ref()), config=get_config())
                    trace_record(trace, *answer.measures)
                    return AskResponse.model_validate(ask_body(
                        answer, trace_id=trace.id)).model_dump()
                return TurnResponse.model_validate(_conversation_ask(
                    current, request=request, conversation_id=conversation_id,
                    trace=trace)).model_dump()
        return _tool_result(body)

    @server.tool(name="list_conversations", annotations=READ_ONLY)
    def list_conversations_tool(limit: Annotated[int, Field(ge=1, le=200)] = 50
                                ) -> Annotated[CallToolResult, list[ConversationSummary]]:
        """This server's caller's conversations, most recently active first: the body of
        GET /conversations."""
        return _tool_result(lambda: [
            ConversationSummary.model_validate(conversation_summary(conversation)).model_dump()
            for conversation in conversations_list(caller=caller(), limit=limit)])

    @server.tool(name="get_conversation", annotations=READ_ONLY)
    def get_conversation_tool(id: Annotated[int, Field(description="a conversation_id")]
                              ) -> Annotated[CallToolResult, ConversationOut]:
        """One conversation with its messages, their citations and standalone queries: the
        body of GET /conversations/{id}."""
        def body() -> dict[str, Any]:
            current = caller()
            return ConversationOut.model_validate(conversation_dict(
                conversation_get(caller=current, conversation_id=id),
                caller=current)).model_dump()
        return _tool_result(body)

    @server.tool(name="list_knowledge_bases", annotations=READ_ONLY)
    def list_knowledge_bases_tool() -> Annotated[CallToolResult, list[KnowledgeBaseOut]]:
        """The knowledge bases this server may read, with their document and chunk counts and
        its role there: the body of GET /knowledge-bases."""
        return _tool_result(lambda: [KnowledgeBaseOut.model_validate(base).model_dump()
                                     for base in kb_list_visible(caller=caller())])

    @server.tool(name="get_document", annotations=READ_ONLY)
    def get_document_tool(id: DocumentId) -> Annotated[CallToolResult, DocumentOut]:
        """A document's metadata, status, page count, versions and last job, by its id (the
        document_id of a search result or citation): the body of GET /documents/{id}."""
        return _tool_result(lambda: DocumentOut.model_validate(
            document_get(caller=caller(), document_id=id)).model_dump())

    @server.tool(name="get_chunk", annotations=READ_ONLY)
    def get_chunk_tool(id: ChunkId) -> Annotated[CallToolResult, ChunkOut]:
        """One chunk's full text, headings, pages, document and knowledge base, by its id (a
        search result's chunk_id)."""
        return _tool_result(lambda: ChunkOut.model_validate(
            chunk_get(caller=caller(), chunk_id=id)).model_dump())

    return server


def _conversation_ask(caller: Caller, *, request: AskRequest, conversation_id: int | None,
                      trace: Trace) -> dict[str, Any]:
    """Ask in a conversation of `caller`'s: the given one (with the request's filters for this
    question, when given), or a new one over the request's knowledge bases and filters; what
    it measured recorded in `trace`."""
    config = get_config()
    filters = filters_plain(request.filters)
    if conversation_id is None:
        conversation = conversation_create(caller=caller, knowledge_bases=request.knowledge_bases,
                                           filters=filters)
        turn = conversation_first_turn(caller=caller, conversation=conversation,
                                       question=request.question, top_k=request.top_k,
                                       fallback=request.fallback, on_llm_error="error",
                                       config=config, trace=trace.ref())
    else:
        turn = turn_answer(turn_prepare(caller=caller, conversation_id=conversation_id,
                                        question=request.question, top_k=request.top_k,
                                        fallback=request.fallback, on_llm_error="error",
                                        config=config, filters=filters, trace=trace.ref()),
                           config=config)
    trace_record(trace, *turn.measures)
    return turn_body(turn, trace_id=trace.id)


def _request(schema: type[Schema], **values: Any) -> Any:
    """The arguments checked by the endpoint's request schema, so that a tool accepts exactly
    what the API accepts (lone surrogates refused as its body parser refuses them); a refusal
    is the API's invalid_request body."""
    lone_surrogate_check(values, root="arguments")
    try:
        return schema.model_validate(values)
    except ValidationError as exc:
        raise invalid_request_of(
            exc.errors(), field_name=lambda loc: ".".join(str(part) for part in loc) or "body"
        ) from None


def _tool_result(body: Callable[[], Any]) -> CallToolResult:
    """Run one tool's services on this worker thread: the body as the API sends it, or the
    unified error body as a tool error."""
    try:
        text = body_json(body())
    except LocalRagError as exc:
        return _error_result(exc.as_body())
    except Exception:
        # As the API's last-resort handler: the details stay in the server's log (stderr).
        logger.exception("unhandled error in an MCP tool")
        return _error_result(error_body("internal_error",
                                        "internal server error; see the server log"))
    finally:
        connections.close_all()
    structured = json.loads(text)
    # Structured content is an object; a list is wrapped as the SDK wraps one ({"result": ...}).
    if not isinstance(structured, dict):
        structured = {"result": structured}
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=structured)


def _error_result(body: dict[str, Any]) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=body_json(body))], is_error=True)
