"""The JSON body parser of both NinjaAPIs: ninja's, plus the refusal of lone surrogates in any
key or string (core/text_input.py), before any operation sees the body."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest
from ninja.parser import Parser

from core.text_input import lone_surrogate_check


class TextJSONParser(Parser):
    def parse_body(self, request: HttpRequest) -> Any:
        data = json.loads(request.body)
        # ninja wraps any error raised here in its HttpError 400; both APIs' handlers answer
        # the wrapped domain error instead (localrag_site/api.py on_http_error).
        lone_surrogate_check(data)
        return data
