"""The contract of GET /me."""

from __future__ import annotations

from typing import Literal

from ninja import Schema


class MyKnowledgeBase(Schema):
    slug: str
    name: str
    role: Literal["reader", "researcher", "maintainer"]


class MeOut(Schema):
    kind: Literal["operator", "token", "user"]
    label: str
    username: str | None
    token_id: int | None
    read_only: bool
    # May create, rename and delete knowledge bases.
    admin: bool
    # Reads every knowledge base, also those created after this answer.
    every_knowledge_base: bool
    knowledge_bases: list[MyKnowledgeBase]
