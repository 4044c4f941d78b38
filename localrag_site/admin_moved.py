"""Old admin addresses of models that moved to their own apps, sent to where they are now, so
that bookmarks and links in notes keep working."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponsePermanentRedirect

# model -> the app that holds it now (it was the knowledge app's)
MOVED_FROM_KNOWLEDGE = {"backgroundjob": "jobs", "trace": "traces", "grant": "access",
                        "apitoken": "access"}
PATTERN = r"^admin/knowledge/(?P<model>" + "|".join(MOVED_FROM_KNOWLEDGE) + r")/(?P<rest>.*)$"


def admin_moved(request: HttpRequest, model: str, rest: str) -> HttpResponsePermanentRedirect:
    query = request.META.get("QUERY_STRING", "")
    target = f"/admin/{MOVED_FROM_KNOWLEDGE[model]}/{model}/{rest}"
    return HttpResponsePermanentRedirect(f"{target}?{query}" if query else target)
