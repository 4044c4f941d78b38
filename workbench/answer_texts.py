"""The server's fixed answer texts and error messages in the interface language, for the
workbench only: the API keeps its bilingual no_answer message and its English error messages
(docs/api.md), so the pages translate what they show of them here."""

from __future__ import annotations

import re
from typing import Any

from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from answering.modes import FALLBACK_DISABLED_MESSAGE, NO_ANSWER_MESSAGE
from core.errors import LocalRagError

# What each error code of core/errors.py's ERROR_TABLE means, in words a reader of the page
# understands (a test keeps every code here and translated); the server's own message, which
# names the particular file, field or setting, follows as the detail.
ERROR_TEXTS = {
    "invalid_request": _("The request is not valid."),
    "invalid_config": _("A setting of this server is not valid."),
    "payload_too_large": _("The request is too large."),
    "unsupported_media_type": _("This kind of file or request is not supported."),
    "unauthorized": _("You are signed out; sign in again."),
    "not_found": _("It was not found, or you may not read it."),
    "bad_request": _("The request could not be read."),
    "forbidden": _("You may not do this."),
    "conflict": _("It conflicts with something that already exists."),
    "outbound_refused": _("This knowledge base's text may not leave this machine, and the "
                          "service this needs is elsewhere."),
    "upload_store_error": _("The upload bucket did not take or give back the file."),
    "too_many_requests": _("Too many requests; wait a moment and try again."),
    "method_not_allowed": _("This action is not available here."),
    "vault_not_found": _("The vault's folder was not found."),
    "archive_invalid": _("The archive is not valid."),
    "restore_refused": _("The restore was refused."),
    "vault_empty": _("The vault holds no notes."),
    "vault_overlap": _("This folder overlaps a source that is already registered."),
    "database_unavailable": _("The database is not reachable."),
    "database_timeout": _("The database took too long to answer."),
    "database_error": _("The database reported an error."),
    "schema_not_initialized": _("The database is not set up yet (rag db init)."),
    "pgvector_unavailable": _("The database lacks the vector extension (pgvector)."),
    "retrieval_not_ready": _("Search is not ready yet: the index or the embedding model is "
                             "missing."),
    "service_not_ready": _("The service is not ready yet."),
    "ingest_locked": _("Another ingest of this knowledge base is running; try again when it "
                       "has finished."),
    "embedding_dim_mismatch": _("The embedding model does not match the index."),
    "embedding_model_unavailable": _("The embedding model is not available."),
    "embedding_runtime_missing": _("The embedding model's runtime is not installed."),
    "embedding_timeout": _("The embedding server took too long to answer."),
    "embedding_auth_failed": _("The embedding server refused this server's API key."),
    "embedding_rate_limited": _("The embedding server is limiting this server; try again "
                                "later."),
    "embedding_upstream_error": _("The embedding server answered with an error."),
    "embedded_postgres_error": _("The embedded PostgreSQL failed."),
    "llm_config_missing": _("No language model is configured on this server."),
    "llm_timeout": _("The language model took too long to answer."),
    "rerank_config_missing": _("The reranker is not configured."),
    "rerank_model_unavailable": _("The reranker's model is not available."),
    "rerank_runtime_missing": _("The reranker's runtime is not installed."),
    "rerank_request_invalid": _("The rerank request is not valid."),
    "rerank_timeout": _("The rerank service took too long to answer."),
    "rerank_auth_failed": _("The rerank service refused this server's API key."),
    "rerank_rate_limited": _("The rerank service is limiting this server; try again later."),
    "rerank_upstream_error": _("The rerank service answered with an error."),
    "database_not_utf8": _("The database does not use UTF-8."),
    "llm_auth_failed": _("The language model's service refused this server's API key."),
    "llm_rate_limited": _("The language model's service is limiting this server; try again "
                          "later."),
    "llm_busy": _("The language model is busy; try again in a moment."),
    "llm_upstream_error": _("The language model's service answered with an error."),
    "llm_unavailable": _("The language model's service failed several times just now; try "
                         "again in a moment."),
    "embedding_unavailable": _("The embedding service failed several times just now; try "
                               "again in a moment."),
    "rerank_unavailable": _("The rerank service failed several times just now; try again in "
                            "a moment."),
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


def error_shown(error: LocalRagError) -> str:
    """A domain error as a page shows it: what its code means in the interface language, then
    the server's own message (which names the file, field or setting at fault)."""
    meaning = error_text({"code": error.code, "message": error.message})
    if not error.message or error.message == meaning:
        return meaning
    return gettext("%(meaning)s (%(detail)s)") % {"meaning": meaning, "detail": error.message}


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
