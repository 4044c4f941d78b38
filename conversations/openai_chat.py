"""An OpenAI chat completion answered from the knowledge base, whole or streamed.

Stateless, as the OpenAI API is: the request's earlier user and assistant messages are the
conversation, nothing is stored. The last user message is made standalone from them
(conversations/condense.py) and searched in the knowledge bases of the model
(conversations/openai_models.py); the answer is generated with the earlier turns in the prompt
(the same budget as a stored conversation: RAG_CONVERSATION_HISTORY_TURNS and _TOKENS), and
its text ends with the cited sources in Markdown. A request carries no stored standalone
queries, so those of the earlier turns are derived again by the deterministic rule (no model
call); only the last question may be condensed by the model."""

from __future__ import annotations

import dataclasses
import json
import re
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from access.callers import Caller
from answering.citations import MARKER_PATTERN
from answering.services import Answer, AskPlan, ask_answer
from answering.sse import SSEFrames
from answering.streaming import AskEventStream, EventStream, ask_stream_of, ask_usage
from conversations.condense import Condensed, Turn, is_follow_up, rule_condense
from conversations.openai_errors import openai_error_of
from conversations.openai_models import model_scope
from conversations.services import follow_up_plan
from conversations.turns import ConversationNotes
from core.config import Config
from core.output import page_span_label
from traces.recording import Measured, TraceRef, measured_on_failure

SOURCES_HEADING = "\n\nSources:\n"
_MARKER = re.compile(MARKER_PATTERN)
_NUMBER = re.compile(r"\d+")
# A marker number longer than this cites no block (and int() of a huge one is refused).
_NUMBER_MAX_DIGITS = 4


@dataclass(frozen=True)
class ChatMessage:
    """One message of the request, its content as text."""

    role: str
    text: str


@dataclass
class ChatTurn:
    """A chat completion being answered: what was decided before generation."""

    model: str
    condensed: Condensed
    plan: AskPlan
    id: str
    created: int = field(default_factory=lambda: int(time.time()))

    @property
    def notes(self) -> ConversationNotes:
        return ConversationNotes(condensation=self.condensed.method)

    @property
    def measures(self) -> tuple[Measured | None, ...]:
        """What preparing the answer measured, in the order it was: the condensation, the
        plan, how the question was condensed."""
        return (self.condensed, self.plan.measures, self.notes)


def chat_prepare(*, caller: Caller, model: str, messages: Sequence[ChatMessage],
                 on_llm_error: str, config: Config, trace: TraceRef | None = None) -> ChatTurn:
    """Make the last user message standalone, retrieve from the model's knowledge bases and
    plan the answer, under `trace` (the completion's id is made of it); raises every
    pre-generation error (an unknown model: not found)."""
    scope = model_scope(caller=caller, model=model)
    question = messages[-1].text
    turns = conversation_turns(messages[:-1])
    condensed, plan = follow_up_plan(
        question=question, turns=turns[-max(config.rag_conversation_history_turns, 1):],
        scope=scope, top_k=None, fallback=False, on_llm_error=on_llm_error, config=config,
        trace=trace)
    return ChatTurn(model=model, condensed=condensed, plan=plan,
                    id=f"chatcmpl-{trace.id if trace is not None else uuid.uuid4()}")


def conversation_turns(messages: Sequence[ChatMessage]) -> list[Turn]:
    """The question-and-answer pairs of earlier messages, oldest first: each user message
    answered by the assistant message right after it (system messages and unanswered
    questions left out), our own Sources list cut from each answer."""
    turns: list[Turn] = []
    spoken = [message for message in messages if message.role in ("user", "assistant")]
    for asked, answered in zip(spoken, spoken[1:], strict=False):
        if asked.role != "user" or answered.role != "assistant":
            continue
        previous = turns[-1].standalone_query if turns else None
        standalone = (rule_condense(asked.text, previous=previous)
                      if previous and is_follow_up(asked.text) else asked.text)
        turns.append(Turn(question=asked.text, standalone_query=standalone,
                          answer=answer_without_sources(answered.text)))
    return turns


def answer_without_sources(text: str) -> str:
    """An earlier answer without the Sources list this endpoint appended to it."""
    return text.rsplit(SOURCES_HEADING, 1)[0] if SOURCES_HEADING in text else text


def sources_markdown(*, text: str, citations: Sequence[dict[str, Any]]) -> str:
    """The Sources list appended to an answer: the blocks its [n] markers cite, or every
    block when it cites none (an answer the model could not give shows what was found)."""
    if not citations:
        return ""
    cited = sorted({int(number) for marker in _MARKER.findall(text)
                    for number in _NUMBER.findall(marker) if len(number) <= _NUMBER_MAX_DIGITS}
                   & set(range(1, len(citations) + 1)))
    lines = [f"- [{number}] {source_label(citations[number - 1])}"
             for number in cited or range(1, len(citations) + 1)]
    return SOURCES_HEADING + "\n".join(lines)


def source_label(citation: dict[str, Any]) -> str:
    """`policies/Support Escalation Policy.md › P1 升级流程, p. 3`."""
    heading = f" › {citation['heading']}" if citation.get("heading") else ""
    pages = page_span_label(page_start=citation.get("page_start"),
                            page_end=citation.get("page_end"))
    return f"{citation['source']}{heading}{', ' + pages if pages else ''}"


def chat_answer(turn: ChatTurn, *, config: Config) -> Answer:
    """Generate the answer, with what preparing and answering it measured (an error carries
    it too)."""
    with measured_on_failure(turn.condensed, turn.notes):
        answer = ask_answer(turn.plan, config=config)
    return dataclasses.replace(answer, measures=(turn.condensed, turn.notes, *answer.measures))


def chat_events(turn: ChatTurn, *, config: Config) -> AskEventStream:
    """The answer's events (its LLM slot taken now), for `ChatChunks`; an error carries what
    preparing the answer measured."""
    with measured_on_failure(turn.condensed, turn.notes):
        return ask_stream_of(turn.plan, config=config)


def chat_completion(turn: ChatTurn, answer: Answer) -> dict[str, Any]:
    """The `chat.completion` body of the turn's answer (answering/services.py `ask_answer`)."""
    usage = _usage(turn.plan)
    content = answer.answer + sources_markdown(text=answer.answer,
                                               citations=turn.plan.citations)
    return {"id": turn.id, "object": "chat.completion", "created": turn.created,
            "model": turn.model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "logprobs": None, "finish_reason": "stop"}],
            "usage": usage, **_additions(turn, notice=answer.notice)}


class ChatChunks(SSEFrames):
    """The answer's events as OpenAI SSE chunks: the role, the text (a model that failed under
    `on_llm_error: sources`: its notice), the Sources list, a last chunk with finish_reason
    `stop` and the additions, the usage chunk when asked for, then `data: [DONE]`; an error
    after the first byte is a `data: {"error": …}` chunk (OpenAI's clients raise it)."""

    def __init__(self, *, turn: ChatTurn, events: EventStream, include_usage: bool) -> None:
        super().__init__(events, closes=events)
        self.turn = turn
        self.include_usage = include_usage

    def __iter__(self) -> Iterator[str]:
        for chunk in self._chunks():
            yield f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n"
        yield "data: [DONE]\n\n"

    def _chunks(self) -> Iterator[dict[str, Any]]:
        text: list[str] = []
        notice = None
        for name, data in self._events:
            if name == "retrieval":
                yield self._chunk({"role": "assistant", "content": ""})
            elif name == "delta":
                text.append(data["text"])
                yield self._chunk({"content": data["text"]})
            elif name == "notice":
                notice = data
                text.append(data["message"])
                yield self._chunk({"content": data["message"]})
            elif name == "citations":
                sources = sources_markdown(text="".join(text), citations=self.turn.plan.citations)
                if sources:
                    yield self._chunk({"content": sources})
            elif name == "error":
                yield openai_error_of(data["error"])
                return
            elif name == "done":
                yield {**self._chunk({}, finish_reason="stop"),
                       **_additions(self.turn, notice=notice)}
        if self.include_usage:
            yield {**self._head(), "choices": [], "usage": _usage(self.turn.plan)}

    def _head(self) -> dict[str, Any]:
        return {"id": self.turn.id, "object": "chat.completion.chunk",
                "created": self.turn.created, "model": self.turn.model}

    def _chunk(self, delta: dict[str, Any], *, finish_reason: str | None = None
               ) -> dict[str, Any]:
        chunk = {**self._head(), "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                              "finish_reason": finish_reason}]}
        # With include_usage, OpenAI sends "usage": null on every chunk but the last.
        return {**chunk, "usage": None} if self.include_usage else chunk


def _usage(plan: AskPlan) -> dict[str, int]:
    """OpenAI's usage of the answer: the model's tokens (the provider's when it reported them,
    else counted); none when no model answered (no_answer, or a notice instead)."""
    if plan.client is None or plan.notice is not None:
        prompt = completion = 0
    else:
        usage = ask_usage(plan)
        prompt, completion = usage["prompt_tokens"] or 0, usage["completion_tokens"] or 0
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}


def _additions(turn: ChatTurn, *, notice: dict[str, Any] | None) -> dict[str, Any]:
    return {"citations": [{**citation, "number": number}
                          for number, citation in enumerate(turn.plan.citations, start=1)],
            "mode": turn.plan.mode, "standalone_query": turn.condensed.query,
            "notice": notice}
