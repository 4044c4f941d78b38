"""Question sets and their versions: made from the `rag eval` YAML format or the same fields as
JSON, bounded, and frozen once a run uses them.

The rule for an edit (PUT /evaluation/sets/{id}, the same service for every caller): questions
equal to the latest version's change nothing; otherwise the latest version is replaced while no
run has used it, and a new version (its number plus one) is made once one has. A run keeps
pointing at the version it evaluated, so its results always read against its own questions.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from access.callers import Caller
from core.errors import Conflict, InvalidRequest, NotFound, PayloadTooLarge
from evaluation.models import QuestionSet, QuestionSetVersion
from evaluation.questions import Question, questions_check, questions_parse

SET_QUESTIONS_MAX = 1000
SET_YAML_MAX_CHARS = 512_000
QUESTION_ID_MAX_CHARS = 100
EXPECTED_SOURCES_MAX = 50
SOURCE_PATH_MAX_CHARS = 1000
SET_NAME_MAX_CHARS = 200


def questions_read(*, yaml_text: str | None, entries: Any, source: str) -> list[Question]:
    """The questions of a request: YAML text or a JSON list (exactly one of them), parsed and
    checked within the set's bounds; InvalidRequest lists every problem in details["errors"]."""
    if (yaml_text is None) == (entries is None):
        raise InvalidRequest("give the questions either as `questions` or as YAML text in "
                             "`yaml`, not both", details={"field": "questions"})
    if yaml_text is not None:
        if len(yaml_text) > SET_YAML_MAX_CHARS:
            raise PayloadTooLarge(f"the YAML is longer than {SET_YAML_MAX_CHARS:,} characters",
                                  details={"field": "yaml", "limit": SET_YAML_MAX_CHARS})
        questions = questions_parse(yaml_text, source=source)
    else:
        if isinstance(entries, list) and len(entries) > SET_QUESTIONS_MAX:
            raise _too_many()
        questions = questions_check(entries, source=source)
    if len(questions) > SET_QUESTIONS_MAX:
        raise _too_many()
    errors = [problem for question in questions for problem in _bounds(question)]
    ids = [question.id for question in questions]
    repeated = sorted({question_id for question_id in ids if ids.count(question_id) > 1})
    if repeated:  # runs are compared question by question, by id
        errors.append(f"question ids must be unique; repeated: {', '.join(repeated)}")
    if errors:
        raise InvalidRequest(errors[0], details={"errors": errors})
    return questions


def _too_many() -> PayloadTooLarge:
    return PayloadTooLarge(f"a question set holds at most {SET_QUESTIONS_MAX} questions",
                           details={"field": "questions", "limit": SET_QUESTIONS_MAX})


def _bounds(question: Question) -> list[str]:
    problems = []
    # PostgreSQL keeps no NUL in JSON text: refused here, with the question's name.
    texts = [question.id, question.question, question.kind, question.reference_answer,
             *question.expected_sources, *question.answer_contains]
    if any("\x00" in text for text in texts):
        problems.append(f"question {question.id[:40]}: a field holds a NUL character")
    if len(question.id) > QUESTION_ID_MAX_CHARS:
        problems.append(f"question {question.id[:40]}…: an id holds at most "
                        f"{QUESTION_ID_MAX_CHARS} characters")
    if len(question.expected_sources) > EXPECTED_SOURCES_MAX or any(
            len(path) > SOURCE_PATH_MAX_CHARS for path in question.expected_sources):
        problems.append(f"question {question.id}: at most {EXPECTED_SOURCES_MAX} "
                        f"expected_sources of at most {SOURCE_PATH_MAX_CHARS} characters")
    return problems


def content_hash(questions: list[dict[str, Any]]) -> str:
    """The sha256 of a version's questions as canonical JSON (migration 0002 hashes alike)."""
    text = json.dumps(questions, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def question_set_create(*, caller: Caller, base_id: int, name: str,
                        questions: list[Question], source_name: str = "") -> QuestionSet:
    """Store checked questions as a new set of base `base_id` with its version 1 (the caller's
    right to do so is checked by who calls this); Conflict for a name the base already has."""
    name = _name_checked(name)
    entries = [asdict(question) for question in questions]
    try:
        with transaction.atomic():
            question_set = QuestionSet.objects.create(
                knowledge_base_id=base_id, name=name, source_name=source_name[:255],
                questions=entries, created_by_id=caller.user_id)
            QuestionSetVersion.objects.create(
                question_set=question_set, number=1, questions=entries,
                content_hash=content_hash(entries), created_by_id=caller.user_id)
    except IntegrityError:
        message = f"this knowledge base already has a question set named {name!r}"
        raise Conflict(message, details={"errors": [message]}) from None
    return question_set


def _name_checked(name: str) -> str:
    name = name.strip()
    if not name or len(name) > SET_NAME_MAX_CHARS:
        message = f"the question set needs a name of 1 to {SET_NAME_MAX_CHARS} characters"
        raise InvalidRequest(message, details={"errors": [message], "field": "name"})
    return name


def question_set_revise(*, caller: Caller, question_set: QuestionSet,
                        questions: list[Question]) -> QuestionSetVersion:
    """Give a set new questions by the rule of this module's docstring; returns the version
    that now holds them."""
    entries = [asdict(question) for question in questions]
    digest = content_hash(entries)
    with transaction.atomic():
        # One edit at a time per set: two would otherwise both make version n + 1.
        QuestionSet.objects.select_for_update().filter(pk=question_set.pk).first()
        latest = version_latest(question_set_id=question_set.pk)
        if latest.content_hash == digest:
            return latest
        if latest.frozen_at is None:
            latest.questions, latest.content_hash = entries, digest
            latest.created_by_id, latest.created_at = caller.user_id, timezone.now()
            latest.save(update_fields=["questions", "content_hash", "created_by", "created_at"])
            version = latest
        else:
            version = QuestionSetVersion.objects.create(
                question_set_id=question_set.pk, number=latest.number + 1, questions=entries,
                content_hash=digest, created_by_id=caller.user_id)
        # The set's own `questions` mirror its latest version: what the workbench shows.
        QuestionSet.objects.filter(pk=question_set.pk).update(questions=entries)
    return version


def version_latest(*, question_set_id: int) -> QuestionSetVersion:
    """A set's newest version (a set made before versions got its version 1 by migration)."""
    version = (QuestionSetVersion.objects.filter(question_set_id=question_set_id)
               .order_by("-number").first())
    if version is None:
        raise NotFound(f"question set has no version: {question_set_id}")
    return version


def version_of(*, question_set_id: int, number: int | None) -> QuestionSetVersion:
    """Version `number` of a set, its latest when None; NotFound for one it does not have."""
    if number is None:
        return version_latest(question_set_id=question_set_id)
    version = QuestionSetVersion.objects.filter(question_set_id=question_set_id,
                                                number=number).first()
    if version is None:
        raise NotFound(f"question set {question_set_id} has no version {number}",
                       details={"version": number})
    return version


def version_freeze(version: QuestionSetVersion) -> None:
    """Mark a version used by a run: from now on an edit makes a new version."""
    if version.frozen_at is None:
        version.frozen_at = timezone.now()
        QuestionSetVersion.objects.filter(pk=version.pk, frozen_at__isnull=True).update(
            frozen_at=version.frozen_at)
