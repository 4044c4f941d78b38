"""The address a request comes from, as the sign-in limits, the bearer-token limits and the audit
log all count it."""

from __future__ import annotations

from django.http import HttpRequest

from core.config import Config


def client_address(request: HttpRequest, *, config: Config) -> str:
    """The address a request comes from: the socket's peer, or — behind the TLS proxy the
    operator declared (RAG_TLS_PROXY) — the last address that proxy added to X-Forwarded-For
    (earlier entries are whatever the client claimed)."""
    forwarded = request.headers.get("X-Forwarded-For", "") if config.rag_tls_proxy else ""
    if forwarded.strip():
        return forwarded.split(",")[-1].strip()[:64]
    return str(request.META.get("REMOTE_ADDR", ""))[:64]
