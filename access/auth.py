"""Bearer authentication of the API: every operation that reads or changes knowledge gets a
`Caller` (access/callers.py) as `request.auth`, or the request is answered 401.

Compatibility with the first release: while access control is off (no token issued, no
RAG_API_TOKEN), a request from loopback — or any request to a server started with
`--trusted-network` — is the local operator and sees everything, as before. A request that a
reverse proxy forwarded is never a loopback caller, whatever its address. Once any token
exists, every such call needs one.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from django.http import HttpRequest
from ninja.security import HttpBearer

from access.callers import Caller, access_control_on, caller_for_secret
from access.throttling import token_failure_record, token_guessing_check
from audit.context import audit_actor_set
from core.client_address import client_address
from core.config import Config, get_config

OPEN_CALLER = Caller(label="open access (no token issued)", readable=frozenset(),
                     writable=frozenset(), everything=True, admin=True)


class CallerAuth(HttpBearer):
    def __call__(self, request: HttpRequest) -> Any:
        config = get_config()
        if not access_control_on(config=config) and _open_to(request, config=config):
            caller: Caller | None = OPEN_CALLER
        else:
            caller = super().__call__(request)
        if caller is not None:
            # What the request changes is audited as this caller's (audit/context.py).
            audit_actor_set(caller.actor())
        return caller

    def authenticate(self, request: HttpRequest, token: str) -> Caller | None:
        return _caller_checked(request, token, config=get_config())


def request_caller(request: HttpRequest) -> Caller | None:
    """The caller of a request to an operation without required auth (/health): its caller
    when it sent valid credentials or access control is off for it, else None."""
    config = get_config()
    if not access_control_on(config=config) and _open_to(request, config=config):
        return OPEN_CALLER
    header = request.headers.get("Authorization", "")
    scheme, _, secret = header.partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        return None
    return _caller_checked(request, secret.strip(), config=config)


def _caller_checked(request: HttpRequest, secret: str, *, config: Config) -> Caller | None:
    """The caller of a bearer secret, counting a bad one against its client address; an
    address past RAG_TOKEN_FAILURE_LIMIT this minute gets 429 before its secret is looked at."""
    address = client_address(request, config=config)
    token_guessing_check(address=address, config=config)
    caller = caller_for_secret(secret, config=config)
    if caller is None:
        token_failure_record(address=address)
    return caller


# A reverse proxy on this machine makes every request come from loopback: a request it
# forwarded (it says so in one of these headers) is never taken for a local caller.
PROXY_HEADERS = ("Forwarded", "X-Forwarded-For", "X-Real-IP")


def _open_to(request: HttpRequest, *, config: Config) -> bool:
    if config.trusted_network:
        return True
    if any(header in request.headers for header in PROXY_HEADERS):
        return False
    try:
        return ipaddress.ip_address(request.META.get("REMOTE_ADDR", "")).is_loopback
    except ValueError:
        return False


caller_auth = CallerAuth()


class CallerRequest(HttpRequest):
    """For annotations only: the request an operation under `caller_auth` is given, a plain
    HttpRequest with the `Caller` that django-ninja sets as `auth`. Never instantiated."""

    auth: Caller
