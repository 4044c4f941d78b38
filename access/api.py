"""The access app's API: `GET /me`, who the caller's credentials act for and what it may do,
so that a front end can show the right bases and actions without trying them."""

from __future__ import annotations

from typing import Any

from ninja import Router

from access.api_schemas import MeOut
from access.auth import CallerRequest
from access.selectors import caller_profile
from core.api_schemas import ErrorBody

router = Router(tags=["access"])

ERRORS = {code: ErrorBody for code in (401, 429, 503)}


@router.get("/me", response={200: MeOut, **ERRORS},
            summary="Who the token acts for, whether it is an admin, and its bases and roles")
def me_view(request: CallerRequest) -> dict[str, Any]:
    return caller_profile(caller=request.auth)
