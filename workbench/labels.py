"""The people's words for the codes the pages show (a role, a status): the code's label in the
interface language, or the code itself where it has none (a new status still shows)."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

LABELS = {
    # Roles of a grant (access/models.py).
    "reader": _("reader"),
    "researcher": _("researcher"),
    "maintainer": _("maintainer"),
    # Documents, jobs and evaluation runs.
    "active": pgettext_lazy("status", "active"),
    "failed": pgettext_lazy("status", "failed"),
    "queued": pgettext_lazy("status", "queued"),
    "running": pgettext_lazy("status", "running"),
    "succeeded": pgettext_lazy("status", "succeeded"),
    "cancelled": pgettext_lazy("status", "cancelled"),
    "done": pgettext_lazy("status", "done"),
    "deleted": pgettext_lazy("status", "deleted"),
    # Review tasks' kinds (review/types.py); their statuses: workbench/pages/review.py.
    "ocr_page": _("OCR page"),
    "table": _("table"),
    # Feedback on an answer (conversations/models.py): its ratings' words, its error types' codes.
    "helpful": _("helpful"),
    "not helpful": _("not helpful"),
    "wrong_answer": _("the answer is wrong"),
    "wrong_citation": _("a citation does not support the answer"),
    "missing_source": _("the right source was not found"),
    "should_refuse": _("it should have said it does not know"),
    "should_answer": _("it should have answered"),
    "other": _("something else"),
    # What the traces page filters by (workbench/pages/traces.py).
    "operation": _("operation"),
    "channel": _("channel"),
    "status": _("status"),
    # Providers' roles (workbench/pages/status.py) and their health.
    "embedding": _("embedding"),
    "LLM": _("LLM"),
    "rerank": _("rerank"),
    "ok": pgettext_lazy("status", "ok"),
    "degraded": pgettext_lazy("status", "degraded"),
    "error": pgettext_lazy("status", "error"),
    "unavailable": pgettext_lazy("status", "unavailable"),
    "disabled": pgettext_lazy("status", "disabled"),
    # The LLM server's last probe (answering/llm_health.py).
    "up": pgettext_lazy("status", "up"),
    "down": pgettext_lazy("status", "down"),
    "local": pgettext_lazy("status", "local"),
    # A circuit breaker's state (core/breaker.py).
    "closed": pgettext_lazy("breaker", "closed"),
    "open": pgettext_lazy("breaker", "open"),
    "half-open": pgettext_lazy("breaker", "half-open"),
    # A knowledge base's outbound policy (embeddings/outbound.py).
    "local-only": _("local only"),
    "allowed": pgettext_lazy("outbound", "may leave this machine"),
}


def code_label(code: object) -> str:
    """The label of `code` in the interface language; the code unchanged when it has none."""
    label = LABELS.get(str(code))
    return str(label) if label is not None else str(code)
