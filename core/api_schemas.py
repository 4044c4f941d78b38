"""Request/response building blocks shared by the apps' API schemas."""

from __future__ import annotations

import unicodedata
from typing import Annotated, Any

from ninja import Schema
from pydantic import AfterValidator, ConfigDict, Field, field_validator

from core.config import MAX_TEXT_CHARS, TOP_K_RANGE


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty or whitespace only")
    return value


def _holds_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    return isinstance(value, list) and any(_holds_nul(item) for item in value)


# Strict: no coercion ("5" is not an int, 1 is not a bool); unknown fields are errors.
class StrictRequest(Schema):
    model_config = ConfigDict(extra="forbid", strict=True)

    # PostgreSQL stores no NUL in text: refused here, in every text field of every request,
    # with the field's name, rather than by the database wherever the text is first written.
    @field_validator("*")
    @classmethod
    def _no_nul(cls, value: Any) -> Any:
        if _holds_nul(value):
            raise ValueError("must not contain a NUL character (\\x00)")
        return value


QueryText = Annotated[str, Field(min_length=1, max_length=MAX_TEXT_CHARS),
                      AfterValidator(_not_blank)]
TopK = Annotated[int | None, Field(default=None, ge=TOP_K_RANGE[0], le=TOP_K_RANGE[1])]
def no_control_characters(value: str) -> str:
    if any(unicodedata.category(character) == "Cc" for character in value):
        raise ValueError("must not contain control characters")
    return value


# Knowledge base slugs a request narrows itself to (at least one; no duplicates needed).
KnowledgeBaseSlug = Annotated[str, Field(min_length=1, max_length=63),
                              AfterValidator(no_control_characters)]
KnowledgeBases = Annotated[list[KnowledgeBaseSlug] | None,
                           Field(default=None, min_length=1, max_length=100)]


class ErrorDetail(Schema):
    code: str
    message: str
    details: dict[str, Any]


class ErrorBody(Schema):
    error: ErrorDetail
