"""Conversations and their messages. A conversation belongs to exactly one owner — a person
signed in to the workbench (`user:<id>`), an API token (`token:<id>`: a token sees only what was
asked with it, never its user's other conversations), RAG_API_TOKEN (`api-token`) or the local
operator (`local`) — and every query filters on `owner` in its SQL. Each assistant message keeps
what an auditor needs: the standalone query that was searched, the cited chunks with their
content hashes and pages, the trace id and the tokens; and the feedback its owner gave."""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models

# The feedback people give on an answer (also the workbench's Feedback on a single answer).
FEEDBACK_UP, FEEDBACK_DOWN = 1, -1
FEEDBACK_RATINGS = [(FEEDBACK_UP, "helpful"), (FEEDBACK_DOWN, "not helpful")]
FEEDBACK_ERROR_TYPES = [
    ("wrong_answer", "the answer is wrong"),
    ("wrong_citation", "a citation does not support the answer"),
    ("missing_source", "the right source was not found"),
    ("should_refuse", "it should have said it does not know"),
    ("should_answer", "it should have answered"),
    ("other", "something else"),
]
TITLE_MAX_CHARS = 200


class Conversation(models.Model):
    owner = models.CharField(max_length=40, db_index=True)
    # For the admin only: who the owner is (the owner key decides what a caller sees).
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True,
                             blank=True, related_name="+")
    # The knowledge bases asked (slugs); null: every base the caller may read at each question.
    knowledge_bases = ArrayField(models.CharField(max_length=63), null=True, blank=True)
    # The metadata filters every question searches with (a request's `filters`, as given;
    # retrieval/filters.py); null: none. A message may give its own instead.
    filters = models.JSONField(null=True, blank=True)
    title = models.CharField(max_length=TITLE_MAX_CHARS, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True, db_index=True)

    class Meta:
        ordering = ["-updated_at", "-id"]
        indexes = [models.Index(fields=["owner", "-updated_at"], name="conversation_owner_recent")]

    def __str__(self) -> str:
        return self.title or f"conversation {self.pk}"


class Message(models.Model):
    USER, ASSISTANT = "user", "assistant"
    ROLES = [(USER, USER), (ASSISTANT, ASSISTANT)]

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE,
                                     related_name="messages")
    role = models.CharField(max_length=16, choices=ROLES)
    text = models.TextField()
    # Assistant messages: the answer's mode and confidence, what was searched, what was cited.
    mode = models.CharField(max_length=16, blank=True, default="")
    confidence = models.FloatField(null=True, blank=True)
    standalone_query = models.TextField(blank=True, default="")
    # How the standalone query was made: as_asked, rule or llm.
    condensation = models.CharField(max_length=16, blank=True, default="")
    citations = models.JSONField(default=list, blank=True)
    # Markers of the answer that no sentence of their block supports (answering/quotes.py).
    unsupported_citations = models.IntegerField(default=0)
    notice = models.JSONField(null=True, blank=True)
    trace_id = models.CharField(max_length=36, blank=True, default="")
    prompt_tokens = models.IntegerField(null=True, blank=True)
    completion_tokens = models.IntegerField(null=True, blank=True)
    token_source = models.CharField(max_length=16, blank=True, default="")
    # {amount, currency} of those tokens at RAG_MODEL_PRICES (core/prices.py); null: unknown.
    cost = models.JSONField(null=True, blank=True)
    rating = models.SmallIntegerField(choices=FEEDBACK_RATINGS, null=True, blank=True)
    error_type = models.CharField(max_length=32, choices=FEEDBACK_ERROR_TYPES, blank=True,
                                  default="")
    comment = models.TextField(blank=True, default="")
    feedback_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["conversation_id", "id"]

    def __str__(self) -> str:
        return f"{self.role} message {self.pk}"
