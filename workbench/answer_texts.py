"""The server's fixed answer texts and error messages in the interface language, for the
workbench only: the API keeps its bilingual no_answer message and its English error messages
(docs/api.md), so the pages translate what they show of them here."""

from __future__ import annotations

import re
from typing import Any

from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from answering.modes import FALLBACK_DISABLED_MESSAGE, NO_ANSWER_MESSAGE

# What each error code means, in words a reader of the page understands; the API's own
# message follows as the detail.
ERROR_TEXTS = {
    "invalid_request": _("The request is not valid."),
    "not_found": _("It was not found, or you may not read it."),
    "forbidden": _("You may not do this."),
    "unauthorized": _("You are signed out; sign in again."),
    "conflict": _("It conflicts with something that already exists."),
    "payload_too_large": _("The request is too large."),
    "unsupported_media_type": _("This kind of file or request is not supported."),
    "retrieval_not_ready": _("Search is not ready yet: the index or the embedding model is "
                             "missing."),
    "llm_timeout": _("The language model took too long to answer."),
    "llm_busy": _("The language model is busy; try again in a moment."),
    "llm_rate_limited": _("The language model's service is limiting this server; try again "
                          "later."),
    "llm_auth_failed": _("The language model's service refused this server's API key."),
    "llm_config_missing": _("No language model is configured on this server."),
    "llm_upstream_error": _("The language model's service answered with an error."),
    "internal_error": _("Something went wrong on the server."),
}
_SEE_ALSO = "See also: "
# The notice's message ends with the cause: "(llm_timeout: the model did not answer in 60 s)".
_NOTICE_CAUSE = re.compile(r"\((?P<code>[a-z_]+): (?P<message>.*)\)\s*$", re.S)


def error_text(error: dict[str, Any]) -> str:
    """What an error code means in the interface language; the API's message for a code
    without words of its own."""
    text = ERROR_TEXTS.get(error.get("code", ""))
    return str(text) if text is not None else str(error.get("message", ""))


def notice_cause(notice: dict[str, Any]) -> str:
    """The cause's own message at the end of an llm_unavailable notice ("" without one)."""
    match = _NOTICE_CAUSE.search(notice.get("message", ""))
    return match.group("message") if match else ""


def no_answer_localised(text: str) -> str:
    """The fixed no_answer text (answering/modes.py `no_answer_text`) with its fixed lines in
    the interface language; any other line stays as written."""
    lines = []
    for line in text.split("\n"):
        if line == NO_ANSWER_MESSAGE:
            line = gettext("The local knowledge base has no answer to this question.")
        elif line == FALLBACK_DISABLED_MESSAGE:
            line = gettext("Fallback to general knowledge was requested, but fallback is "
                           "disabled on this server.")
        elif line.startswith(_SEE_ALSO):
            line = gettext("See also: %(sources)s") % {"sources": line.removeprefix(_SEE_ALSO)}
        lines.append(line)
    return "\n".join(lines)
