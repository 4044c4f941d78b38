"""The interface language of the workbench and the admin: English or Simplified Chinese, from
the person's choice (the language cookie the switch sets) or else the browser's
`Accept-Language`.

Only the people's pages are translated: the JSON API, the OpenAI-compatible endpoints and MCP
keep their fixed texts and headers whatever the caller's language, so they run in the default
language and get none of the `Vary`/`Content-Language` headers Django's LocaleMiddleware adds."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.middleware.locale import LocaleMiddleware
from django.utils import translation

from workbench.security import PROTECTED_PREFIXES


class PeopleLocaleMiddleware(LocaleMiddleware):
    """Django's LocaleMiddleware under /workbench/ and /admin/ only."""

    def process_request(self, request: HttpRequest) -> None:
        if request.path.startswith(PROTECTED_PREFIXES):
            super().process_request(request)
        else:
            # A thread's language outlives its request: an API request after a Chinese page in
            # the same worker thread must not inherit it.
            translation.activate(settings.LANGUAGE_CODE)
            request.LANGUAGE_CODE = settings.LANGUAGE_CODE

    def process_response(self, request: HttpRequest,
                         response: HttpResponseBase) -> HttpResponseBase:
        if request.path.startswith(PROTECTED_PREFIXES):
            return super().process_response(request, response)
        return response
