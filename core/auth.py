"""The optional API token: with RAG_API_TOKEN set, the query endpoints need
`Authorization: Bearer <token>`; without it they are open, as on a default loopback install."""

from __future__ import annotations

import hmac
from typing import Any

from django.http import HttpRequest
from ninja.security import HttpBearer

from core.config import get_config


class ApiTokenAuth(HttpBearer):
    """Bearer-token check for django-ninja operations, compared in constant time."""

    def __call__(self, request: HttpRequest) -> Any:
        if not get_config().rag_api_token:
            return True
        return super().__call__(request)

    def authenticate(self, request: HttpRequest, token: str) -> str | None:
        expected = get_config().rag_api_token.encode()
        # compare_digest takes equal time for any token of any length: no timing oracle.
        return "api-token" if hmac.compare_digest(token.encode(), expected) else None


api_token_auth = ApiTokenAuth()
