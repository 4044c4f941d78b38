"""Conversations in the workbench: the thread of one, each answer with its source cards and its
owner's feedback, and a question asked in it streamed as the Ask page streams (the services are
conversations/services.py; every read filters on the person's owner key there)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from django.template.loader import render_to_string
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext

from access.callers import Caller
from conversations.condense import AS_ASKED
from conversations.models import FEEDBACK_UP, Conversation, Message
from conversations.selectors import WITHHELD_MESSAGE, cited_slugs
from conversations.services import conversations_list
from conversations.turns import ConversationTurn
from workbench.forms import ConversationStartForm
from workbench.pages.ask import (
    AnswerView,
    ScoresShown,
    answer_fragment,
    answer_progress,
    card_excerpt,
    chunk_rows,
    citation_cards,
    plan_cards,
    scores_shown,
)
from workbench.pages.quotes import quoted_cards
from workbench.pages.wikilinks import linked_answer

ASIDE_LIMIT = 12  # conversations listed beside the Ask page and a thread
LIST_PAGE_SIZE = 50


@dataclass(frozen=True)
class ThreadTurn:
    """One question of a thread with what the page shows under it."""

    question: str
    question_id: int | None  # None: the question was refused before it was stored
    searched_as: str  # the standalone query searched, when it is not the question as asked
    answer_html: SafeString | None  # None: no answer was stored (the generation failed)


def message_anchor(message_id: int) -> str:
    return f"m{message_id}-source-"


def searched_as(*, query: str, condensation: str) -> str:
    """The standalone query to show under a follow-up ("" when it was searched as asked)."""
    return query if condensation and condensation != AS_ASKED else ""


def thread_turns(*, caller: Caller, conversation: Conversation) -> list[ThreadTurn]:
    """The conversation's questions, oldest first, each with its stored answer rendered."""
    messages = list(conversation.messages.order_by("id"))
    # Cards link only to chunks the person may still read, unchanged since the answer.
    rows = chunk_rows([citation.get("chunk_id") for message in messages
                       for citation in message.citations],
                      knowledge_base_ids=caller.scope().knowledge_base_ids)
    # As the API shows them (conversations/selectors.py): an answer citing a base the person
    # can no longer read is withheld.
    unreadable = caller.unreadable(slug for message in messages for slug in cited_slugs(message))
    shown = scores_shown(caller=caller, slugs=conversation.knowledge_bases)
    turns = []
    for index, message in enumerate(messages):
        if message.role != Message.USER:
            continue
        following = messages[index + 1] if index + 1 < len(messages) else None
        answer = following if following and following.role == Message.ASSISTANT else None
        if answer is not None and unreadable & cited_slugs(answer):
            turns.append(ThreadTurn(question=message.text, question_id=message.pk,
                                    searched_as="", answer_html=format_html(
                                        '<p class="muted withheld">{}</p>',
                                        gettext(WITHHELD_MESSAGE))))
            continue
        turns.append(ThreadTurn(
            question=message.text, question_id=message.pk,
            searched_as=searched_as(query=answer.standalone_query,
                                    condensation=answer.condensation) if answer else "",
            answer_html=mark_safe(answer_fragment(stored_answer(answer, rows, shown=shown)))
            if answer else None))
    return turns


def stored_answer(message: Message, rows: dict[int, dict[str, Any]], *,
                  shown: ScoresShown) -> AnswerView:
    """An assistant message as the answer fragment shows it, with the numbers `shown`."""
    unchanged = {citation["chunk_id"]: rows[citation["chunk_id"]]
                 for citation in message.citations
                 if citation.get("chunk_id") in rows
                 and rows[citation["chunk_id"]]["content_hash"] == citation.get("content_hash")}
    cards = citation_cards(message.citations,
                           [citation.get("chunk_id") for citation in message.citations],
                           unchanged)
    for card in cards:
        card["gone"] = card["chunk_id"] is None
    feedback = None
    if message.rating is not None:
        feedback = {"rating": "up" if message.rating == FEEDBACK_UP else "down",
                    "error_type": message.error_type,
                    "error_type_label": message.get_error_type_display(),
                    "comment": message.comment}
    view = AnswerView(mode=message.mode, confidence=message.confidence, text=message.text,
                      citations=cards, trace_id=message.trace_id or None, notice=message.notice,
                      message_id=message.pk, feedback=feedback,
                      anchor=message_anchor(message.pk), shown=shown)
    view.citations, view.links = linked_answer(
        quoted_cards(cards, answer=message.text, checked=view.look == "answer",
                     excerpt=card_excerpt),
        answer=message.text)
    view.unsupported = message.unsupported_citations
    return view


def turn_fragment(turn: ThreadTurn) -> str:
    return render_to_string("workbench/_turn.html", {"turn": turn})


def turn_events(events: Iterable[tuple[str, dict]], view: AnswerView, *, turn: ConversationTurn,
                caller: Caller) -> Iterator[tuple[str, dict]]:
    """A question's events for the thread page: `status` (with the standalone query),
    `delta`..., `notice` when the model failed, and `result` with the rendered turn — its
    sources shown whatever happened to the written answer — and the conversation list beside
    the thread as it is now (the turn's messages counted, the conversation first)."""
    view.citations = plan_cards(turn.plan)
    yield from answer_progress(events, view, plan=turn.plan)
    if view.message_id is not None:
        view.anchor = message_anchor(view.message_id)
    elif view.trace_id:
        view.anchor = f"t{view.trace_id[:8]}-source-"
    rendered = ThreadTurn(question=turn.question.text, question_id=turn.question.pk,
                          searched_as=searched_as(query=turn.condensed.query,
                                                  condensation=turn.condensed.method),
                          answer_html=mark_safe(answer_fragment(view)))
    yield "result", {"html": turn_fragment(rendered), "look": view.look,
                     "title": turn.conversation.title,
                     "conversations": conversation_list_html(caller=caller,
                                                             current=turn.conversation)}


def aside_context(*, caller: Caller, bases: list[dict],
                  current: Conversation | None = None) -> dict[str, Any]:
    """What the conversation list beside the Ask page and a thread shows."""
    return {"aside_conversations": conversations_list(caller=caller, limit=ASIDE_LIMIT),
            "start_form": ConversationStartForm(bases=bases), "current_conversation": current}


def conversation_list_html(*, caller: Caller, current: Conversation | None) -> str:
    """The items of the conversation list beside the Ask page and a thread."""
    return render_to_string("workbench/_conversation_list.html", {
        "aside_conversations": conversations_list(caller=caller, limit=ASIDE_LIMIT),
        "current_conversation": current})


def scope_label(conversation: Conversation, bases: list[dict]) -> str:
    """The knowledge bases a conversation asks, by name."""
    if conversation.knowledge_bases is None:
        return gettext("All my knowledge bases")
    names = {base["slug"]: base["name"] for base in bases}
    return ", ".join(names.get(slug, slug) for slug in conversation.knowledge_bases)


_OPERATOR_SIGNS = {"eq": "=", "gte": "≥", "gt": ">", "lte": "≤", "lt": "<", "in": "∈"}


def filters_label(filters: dict[str, Any] | None) -> str:
    """A conversation's metadata filters (a request's `filters`, as stored) in one line:
    `folder: Projects · tags: alpha · year ≥ 2019` ("" without filters)."""
    if not filters:
        return ""
    parts: list[str] = []
    for key, value in filters.items():
        if key == "frontmatter" and isinstance(value, dict):
            for name, condition in value.items():
                if isinstance(condition, dict):
                    parts.extend(f"{name} {_OPERATOR_SIGNS.get(op, op)} {_shown(operand)}"
                                 for op, operand in condition.items())
                else:
                    parts.append(f"{name} = {_shown(condition)}")
        elif isinstance(value, dict):  # a date range: {"gte": "2024-01-01"}
            parts.extend(f"{key} {_OPERATOR_SIGNS.get(op, op)} {_shown(operand)}"
                         for op, operand in value.items())
        else:
            parts.append(f"{key}: {_shown(value)}")
    return " · ".join(parts)


def _shown(value: Any) -> str:
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)
