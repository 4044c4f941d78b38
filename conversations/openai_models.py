"""The knowledge bases as OpenAI "models": `local-rag` for every base the caller may read, and
`kb:<slug>` for one of them.

The prefix keeps the two kinds apart (a base may well be called `local-rag`, but a slug never
holds a colon). A model the caller may not read and one that does not exist answer alike, as
knowledge bases do everywhere else: not found."""

from __future__ import annotations

from typing import Any

from access.callers import Caller, Scope
from core.db import db_errors_translated
from core.errors import NotFound
from knowledge.models import KnowledgeBase

ALL_MODEL = "local-rag"
KB_PREFIX = "kb:"
OWNER = "local-rag"


def openai_models_list(*, caller: Caller) -> list[dict[str, Any]]:
    """The /v1/models entries of the caller: `local-rag` first, then one per readable base."""
    with db_errors_translated():
        bases = list(KnowledgeBase.objects.filter(pk__in=caller.scope().knowledge_base_ids)
                     .order_by("slug").values_list("slug", "name", "created_at"))
    # The "all of mine" model is as old as the oldest base it reads (0 while there is none).
    oldest = min((int(created.timestamp()) for _, _, created in bases), default=0)
    return [_entry(ALL_MODEL, name="local-rag: every knowledge base you may read",
                   created=oldest),
            *(_entry(f"{KB_PREFIX}{slug}", name=name or slug, created=int(created.timestamp()))
              for slug, name, created in bases)]


def openai_model_get(*, caller: Caller, model: str) -> dict[str, Any]:
    """One /v1/models entry of the caller (NotFound for any other model id)."""
    found = next((entry for entry in openai_models_list(caller=caller)
                  if entry["id"] == model), None)
    if found is None:
        raise model_not_found(model)
    return found


def model_scope(*, caller: Caller, model: str) -> Scope:
    """The knowledge bases a model id stands for, as the caller may read them now."""
    if model == ALL_MODEL:
        return caller.scope()
    if model.startswith(KB_PREFIX) and len(model) > len(KB_PREFIX):
        try:
            return caller.scope(slugs=[model[len(KB_PREFIX):]])
        except NotFound:
            raise model_not_found(model) from None
    raise model_not_found(model)


def model_not_found(model: str) -> NotFound:
    return NotFound(f"model not found: {model!r}; GET /v1/models lists the models this token "
                    f"may use ({ALL_MODEL!r}, or {KB_PREFIX}<knowledge base slug>)",
                    details={"param": "model", "model": model})


def _entry(model_id: str, *, name: str, created: int) -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": created, "owned_by": OWNER,
            "name": name}
