"""Ask: a question box and a knowledge-base selector; the answer streams in, then shows with
its source cards. Without JavaScript the form posts and the whole answer comes back as a page."""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import closing

from django.http import HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.urls import path
from django.views.decorators.http import require_http_methods, require_POST

from answering.services import AnswerRequest
from answering.sse import SSE_CONTENT_TYPE, SSEFrames, sse_frame, sse_response
from answering.streaming import RecordedEvents, ask_stream_open
from core.config import get_config
from core.errors import LocalRagError, http_status_of
from knowledge.selectors import kb_list_visible
from traces.recording import Trace, trace_of, trace_record, trace_ref
from workbench.answer_texts import error_shown
from workbench.auth import PersonRequest, person_view
from workbench.forms import AskForm
from workbench.models import Feedback
from workbench.pages.ask import (
    AnswerView,
    ScoresShown,
    answer_events,
    answer_failed,
    answer_fragment,
    scores_shown,
)
from workbench.pages.conversations import aside_context
from workbench.pages.feedback import feedback_record


@require_http_methods(["GET", "POST"])
@person_view
def ask_page(request: PersonRequest) -> HttpResponse:
    bases = kb_list_visible(caller=request.caller)
    form = AskForm(request.POST or None, bases=bases)
    answer_html = None
    status = 200
    if request.method == "POST" and form.is_valid():
        view = AnswerView(shown=_shown(request, form))
        trace = trace_of(request)
        try:
            # closing(): the LLM slot goes back even when the page fails halfway.
            with closing(_open(request, form, trace=trace)) as stream:
                for name, data in answer_events(stream, view):
                    if name == "result":
                        answer_html = data["html"]
        except LocalRagError as exc:
            view = answer_failed(exc, trace=trace)
            answer_html = answer_fragment(view)
        if view.error is not None:
            # A failed generation is known only by its error event, which names the code.
            status = http_status_of(view.error["code"])
    elif request.method == "POST":
        status = 422
    return render(request, "workbench/ask.html",
                  {"form": form, "bases": bases, "answer_html": answer_html,
                   **aside_context(caller=request.caller, bases=bases)}, status=status)


@require_POST
@person_view
def ask_stream(request: PersonRequest) -> HttpResponse | StreamingHttpResponse:
    """Server-Sent Events for the page's script: status, delta..., result (rendered HTML)."""
    form = AskForm(request.POST, bases=kb_list_visible(caller=request.caller))
    if not form.is_valid():
        return events_response([("invalid", {"errors": form.errors.get_json_data()})],
                                status=422)
    trace = trace_of(request)
    try:
        stream = _open(request, form, trace=trace)
    except LocalRagError as exc:
        view = answer_failed(exc, trace=trace)
        return events_response([("result", {"html": answer_fragment(view), "look": "error"})],
                                status=exc.http_status)
    view = AnswerView(shown=_shown(request, form))
    return sse_response(SSEFrames(answer_events(stream, view), closes=stream))


@require_POST
@person_view
def feedback(request: PersonRequest) -> HttpResponse:
    try:
        record = feedback_record(user=request.user, trace_id=request.POST.get("trace_id", ""),
                                 rating=request.POST.get("rating", ""),
                                 error_type=request.POST.get("error_type", ""),
                                 comment=request.POST.get("comment", ""))
    except LocalRagError as exc:
        return render(request, "workbench/_feedback_done.html", {"error": error_shown(exc)},
                      status=exc.http_status)
    return render(request, "workbench/_feedback_done.html", {"feedback": record,
                                                              "choices": Feedback.ERROR_TYPES})


def _shown(request: PersonRequest, form: AskForm) -> ScoresShown:
    """The numbers this person sees with the answer (the bases asked: the form's one, or all)."""
    slug = form.cleaned_data["knowledge_base"]
    return scores_shown(caller=request.caller, slugs=[slug] if slug else None)


def _open(request: PersonRequest, form: AskForm, *, trace: Trace | None) -> RecordedEvents:
    """The answer's events, what they measure recorded in `trace` as they go."""
    data = form.cleaned_data
    slugs = [data["knowledge_base"]] if data["knowledge_base"] else None
    stream = ask_stream_open(AnswerRequest(question=data["question"],
                                           scope=request.caller.scope(slugs=slugs),
                                           top_k=data["top_k"], fallback=data["fallback"],
                                           filters=data["filters"], trace=trace_ref(trace)),
                             config=get_config())
    trace_record(trace, stream.plan.measures)
    return RecordedEvents(stream, plan=stream.plan, trace=trace)


def events_response(events: Iterable[tuple[str, dict]], *, status: int) -> HttpResponse:
    """Events known at once (a refusal before any stream), as one SSE response."""
    response = HttpResponse("".join(sse_frame(name, data) for name, data in events),
                            content_type=SSE_CONTENT_TYPE, status=status)
    response["Cache-Control"] = "no-cache"
    return response


urlpatterns = [
    path("ask/", ask_page, name="ask"),
    path("ask/stream", ask_stream, name="ask-stream"),
    path("feedback/", feedback, name="feedback"),
]
