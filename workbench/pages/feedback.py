"""Thumbs up or down on an answer, kept per person and answer (trace)."""

from __future__ import annotations

import uuid

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser

from core.errors import InvalidRequest, NotFound
from traces.models import Trace
from workbench.models import Feedback

RATINGS = {"up": Feedback.UP, "down": Feedback.DOWN}


def feedback_record(*, user: AbstractBaseUser | AnonymousUser, trace_id: str, rating: str,
                    error_type: str = "", comment: str = "") -> Feedback:
    """Record (or change) `user`'s feedback on the answer of `trace_id` — an answer this user
    was given; anyone else's is not found."""
    if rating not in RATINGS:
        raise InvalidRequest("rating must be up or down", details={"field": "rating"})
    if error_type and error_type not in dict(Feedback.ERROR_TYPES):
        raise InvalidRequest(f"unknown error type: {error_type}",
                             details={"field": "error_type"})
    if len(comment) > 2000:
        raise InvalidRequest("the comment is longer than 2000 characters",
                             details={"field": "comment"})
    try:
        uuid.UUID(trace_id)
    except ValueError:
        raise NotFound("answer not found", details={"trace_id": trace_id}) from None
    owned = Trace.objects.filter(id=trace_id, user_id=user.pk,
                                 operation__in=("ask", "ask_stream")).exists()
    if not owned:
        raise NotFound("answer not found", details={"trace_id": trace_id})
    feedback, _ = Feedback.objects.update_or_create(
        trace_id=trace_id, user=user,
        defaults={"rating": RATINGS[rating], "error_type": error_type if rating == "down" else "",
                  "comment": comment.strip()})
    return feedback
