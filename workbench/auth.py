"""Who a workbench request acts for: the signed-in person, as a `Caller` of
access/callers.py — the same object the API and MCP use, so every page reads exactly the
knowledge bases that person's grants allow."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import TYPE_CHECKING, Concatenate, ParamSpec, cast

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import resolve_url

from access.callers import Caller, caller_for_user
from core.errors import Forbidden, NotFound

if TYPE_CHECKING:
    from django_htmx.middleware import HtmxDetails

P = ParamSpec("P")


class PersonRequest(HttpRequest):
    """For annotations only: the request a `person_view` passes its view, a plain HttpRequest
    with the attributes that decorator (`caller`, `auth`) and django-htmx's middleware (`htmx`)
    give it. Never instantiated."""

    caller: Caller
    auth: Caller
    htmx: HtmxDetails


def person_view(view: Callable[Concatenate[PersonRequest, P], HttpResponseBase]
                ) -> Callable[Concatenate[HttpRequest, P], HttpResponseBase]:
    """Sign-in required; `request.caller` is the person's Caller (also `request.auth`, which
    the trace middleware records as the trace's caller).

    A service's NotFound (missing, or hidden from this person: answered alike) becomes the
    page's 404 and its Forbidden the page's 403.

    Signed out, a page is redirected to the sign-in page; an htmx request (a poll, a fragment)
    is answered 401 with `HX-Redirect`, so the whole page goes to the sign-in page instead of
    the sign-in form being swapped into a fragment."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: P.args, **kwargs: P.kwargs) -> HttpResponseBase:
        person = cast(PersonRequest, request)  # given its attributes here
        if not request.user.is_authenticated:
            if getattr(request, "htmx", False):
                response = HttpResponse(status=401)
                response["HX-Redirect"] = redirect_to_login(
                    person.htmx.current_url_abs_path or request.get_full_path(),
                    resolve_url(settings.LOGIN_URL))["Location"]
                return response
            return redirect_to_login(request.get_full_path(), resolve_url(settings.LOGIN_URL))
        person.caller = person.auth = caller_for_user(request.user)
        try:
            return view(person, *args, **kwargs)
        except NotFound as exc:
            raise Http404(exc.message) from None
        except Forbidden as exc:
            raise PermissionDenied(exc.message) from None

    return wrapped


def research_view(view: Callable[Concatenate[PersonRequest, P], HttpResponseBase]
                  ) -> Callable[Concatenate[HttpRequest, P], HttpResponseBase]:
    """Like `person_view`, for people who may research at least one knowledge base (the lab,
    evaluation, traces): 403 for one who only reads. Each page still checks the bases it
    shows (`Caller.research_check`, or lists narrowed by `Caller.researching`)."""

    @person_view
    @wraps(view)
    def wrapped(request: PersonRequest, *args: P.args, **kwargs: P.kwargs) -> HttpResponseBase:
        if not request.caller.researches_anything:
            raise PermissionDenied("only researchers and maintainers may see this page")
        return view(request, *args, **kwargs)

    return wrapped
