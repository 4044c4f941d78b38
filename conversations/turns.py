"""A question asked after earlier turns, as it goes: prepared in a stored conversation
(ConversationTurn), answered there (TurnAnswer), and what it adds to its trace beside the
answer's own measures (ConversationNotes). conversations/services.py makes them."""

from __future__ import annotations

from dataclasses import dataclass, field

from answering.services import Answer, AskPlan
from conversations.condense import Condensed
from conversations.models import Conversation, Message
from traces.recording import Measured, Trace


@dataclass(frozen=True)
class ConversationNotes:
    """What a question asked after earlier turns adds to its trace beside the answer's: how
    it was made standalone, and in which stored conversation (none for a stateless chat)."""

    condensation: str
    conversation_id: int | None = None

    def record(self, trace: Trace) -> None:
        trace.parameters["condensation"] = self.condensation
        if self.conversation_id is not None:
            trace.parameters["conversation_id"] = self.conversation_id


@dataclass
class ConversationTurn:
    """A question being answered in a conversation: what was decided before generation."""

    conversation: Conversation
    question: Message
    condensed: Condensed
    plan: AskPlan

    @property
    def notes(self) -> ConversationNotes:
        return ConversationNotes(condensation=self.condensed.method,
                                 conversation_id=self.conversation.pk)

    @property
    def measures(self) -> tuple[Measured | None, ...]:
        """What preparing the turn measured, in the order it was: the condensation, the plan,
        the conversation's notes."""
        return (self.condensed, self.plan.measures, self.notes)


@dataclass(frozen=True)
class TurnAnswer:
    """A question answered in a conversation (conversations/api_schemas.py `turn_body`):
    the answer, the ids of the question and answer stored, the query searched, and what
    answering it measured."""

    answer: Answer
    conversation_id: int
    question_message_id: int
    message_id: int
    standalone_query: str
    condensation: str
    measures: tuple[Measured | None, ...] = field(default=(), compare=False)
