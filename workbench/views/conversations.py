"""Conversations: the list (beside the Ask page, and a page of its own), a thread with its
answers' source cards and feedback, a follow-up asked in it (streamed for the page's script;
without JavaScript the form posts and the thread comes back with the answer), rename, delete.

Every path reads the conversation through the person's owner key first: anyone else's is 404."""

from __future__ import annotations

from django.http import HttpResponse, HttpResponseRedirect, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from answering.services import ON_LLM_ERROR_SOURCES
from answering.sse import SSEFrames, sse_response
from answering.streaming import RecordedEvents
from conversations.models import Conversation
from conversations.services import (
    conversation_create,
    conversation_delete,
    conversation_get,
    conversation_rename,
    conversations_list,
    message_feedback_record,
    turn_answer,
    turn_prepare,
    turn_stream,
)
from core.config import get_config
from core.errors import LocalRagError
from knowledge.selectors import kb_list_visible
from traces.recording import Trace, trace_of, trace_record, trace_ref
from workbench.answer_texts import error_shown
from workbench.auth import PersonRequest, person_view
from workbench.forms import ConversationAskForm, ConversationRenameForm, ConversationStartForm
from workbench.pages.ask import AnswerView, answer_failed, answer_fragment, scores_shown
from workbench.pages.conversations import (
    LIST_PAGE_SIZE,
    ThreadTurn,
    aside_context,
    filters_label,
    scope_label,
    thread_turns,
    turn_events,
    turn_fragment,
)
from workbench.views.ask import events_response


@require_GET
@person_view
def conversations_page(request: PersonRequest) -> HttpResponse:
    bases = kb_list_visible(caller=request.caller)
    return _list_page(request, start_form=ConversationStartForm(bases=bases))


@require_POST
@person_view
def conversation_new(request: PersonRequest) -> HttpResponse:
    """Start an empty conversation over one knowledge base or all of the person's."""
    form = ConversationStartForm(request.POST, bases=kb_list_visible(caller=request.caller))
    if not form.is_valid():
        return _list_page(request, start_form=form, status=422)
    slug = form.cleaned_data["knowledge_base"]
    conversation = conversation_create(caller=request.caller,
                                       knowledge_bases=[slug] if slug else None,
                                       filters=form.cleaned_data["filters_raw"])
    return redirect("workbench:conversation", conversation.pk)


@require_http_methods(["GET", "POST"])
@person_view
def conversation_page(request: PersonRequest, conversation_id: int) -> HttpResponse:
    """The thread; a POST asks in it and shows the thread with the answer."""
    conversation = conversation_get(caller=request.caller, conversation_id=conversation_id)
    form = ConversationAskForm(request.POST or None)
    refused, failure_html, status = None, None, 200
    if request.method == "POST" and form.is_valid():
        config = get_config()
        data = form.cleaned_data
        trace = trace_of(request)
        try:
            turn = turn_prepare(caller=request.caller, conversation_id=conversation.pk,
                                question=data["question"], top_k=data["top_k"],
                                fallback=data["fallback"], on_llm_error=ON_LLM_ERROR_SOURCES,
                                config=config, trace=trace_ref(trace))
        except LocalRagError as exc:
            refused = _refused(data["question"], exc, trace=trace)
            status = exc.http_status
        else:
            try:
                trace_record(trace, *turn_answer(turn, config=config).measures)
                form = ConversationAskForm()
            except LocalRagError as exc:  # the question is stored, its answer is not
                failure_html = mark_safe(answer_fragment(answer_failed(exc, trace=trace)))
                status = exc.http_status
            conversation = conversation_get(caller=request.caller,
                                            conversation_id=conversation.pk)
    elif request.method == "POST":
        status = 422
    return _thread_page(request, conversation, form=form, refused=refused,
                        failure_html=failure_html, status=status)


@require_POST
@person_view
def conversation_stream(request: PersonRequest,
                        conversation_id: int) -> HttpResponse | StreamingHttpResponse:
    """Server-Sent Events for the thread's script: status (with the standalone query),
    delta..., notice, result (the rendered turn)."""
    conversation = conversation_get(caller=request.caller, conversation_id=conversation_id)
    form = ConversationAskForm(request.POST)
    if not form.is_valid():
        return events_response([("invalid", {"errors": form.errors.get_json_data()})],
                               status=422)
    config = get_config()
    data = form.cleaned_data
    trace = trace_of(request)
    try:
        turn = turn_prepare(
            caller=request.caller, conversation_id=conversation.pk, question=data["question"],
            top_k=data["top_k"], fallback=data["fallback"], on_llm_error=ON_LLM_ERROR_SOURCES,
            config=config, trace=trace_ref(trace))
        stream = turn_stream(turn, config=config)
    except LocalRagError as exc:
        return events_response([("result", {"html": turn_fragment(_refused(
            data["question"], exc, trace=trace)), "look": "error"})], status=exc.http_status)
    trace_record(trace, *turn.measures)
    events = RecordedEvents(stream, plan=turn.plan, trace=trace)
    view = AnswerView(shown=scores_shown(caller=request.caller,
                                         slugs=conversation.knowledge_bases))
    return sse_response(SSEFrames(turn_events(events, view, turn=turn, caller=request.caller),
                                  closes=events))


@require_POST
@person_view
def conversation_rename_view(request: PersonRequest, conversation_id: int) -> HttpResponse:
    conversation = conversation_get(caller=request.caller, conversation_id=conversation_id)
    form = ConversationRenameForm(request.POST)
    if not form.is_valid():
        return _thread_page(request, conversation, form=ConversationAskForm(),
                            rename_form=form, status=422)
    conversation_rename(caller=request.caller, conversation_id=conversation.pk,
                        title=form.cleaned_data["title"])
    return _back(request, default=reverse("workbench:conversation", args=[conversation.pk]))


@require_POST
@person_view
def conversation_delete_view(request: PersonRequest, conversation_id: int) -> HttpResponse:
    conversation_delete(caller=request.caller, conversation_id=conversation_id)
    return _back(request, default=reverse("workbench:conversations"))


@require_POST
@person_view
def message_feedback(request: PersonRequest, message_id: int) -> HttpResponse:
    """Feedback on an answer of one of the person's conversations: the form's new state for
    htmx, the thread again without JavaScript."""
    try:
        message = message_feedback_record(
            caller=request.caller, message_id=message_id, rating=request.POST.get("rating", ""),
            error_type=request.POST.get("error_type", ""),
            comment=request.POST.get("comment", ""))
    except LocalRagError as exc:
        return render(request, "workbench/_feedback_done.html", {"error": error_shown(exc)},
                      status=exc.http_status)
    if not request.htmx:
        return redirect(reverse("workbench:conversation", args=[message.conversation_id])
                        + f"#message-{message.pk}")
    return render(request, "workbench/_feedback_done.html", {"feedback": message})


def _refused(question: str, exc: LocalRagError, *, trace: Trace | None) -> ThreadTurn:
    """A question refused before it was stored, with its error as the answer."""
    return ThreadTurn(question=question, question_id=None, searched_as="",
                      answer_html=mark_safe(answer_fragment(answer_failed(exc, trace=trace))))


def _list_page(request: PersonRequest, *, start_form: ConversationStartForm,
               status: int = 200) -> HttpResponse:
    try:
        offset = max(int(request.GET.get("offset", "0")), 0)
    except ValueError:
        offset = 0
    # One more than a page: whether there is a next one.
    found = conversations_list(caller=request.caller, limit=LIST_PAGE_SIZE + 1, offset=offset)
    return render(request, "workbench/conversations.html", {
        "conversations": found[:LIST_PAGE_SIZE], "start_form": start_form,
        "next_offset": offset + LIST_PAGE_SIZE if len(found) > LIST_PAGE_SIZE else None,
        "previous_offset": max(offset - LIST_PAGE_SIZE, 0) if offset else None,
        "here": request.get_full_path()}, status=status)


def _thread_page(request: PersonRequest, conversation: Conversation, *,
                 form: ConversationAskForm, rename_form: ConversationRenameForm | None = None,
                 refused: ThreadTurn | None = None, failure_html: str | None = None,
                 status: int = 200) -> HttpResponse:
    bases = kb_list_visible(caller=request.caller)
    return render(request, "workbench/conversation.html", {
        "conversation": conversation,
        "turns": thread_turns(caller=request.caller, conversation=conversation),
        "scope": scope_label(conversation, bases), "form": form,
        "filters": filters_label(conversation.filters),
        "rename_form": rename_form or ConversationRenameForm(
            initial={"title": conversation.title}),
        "refused": refused, "failure_html": failure_html,
        **aside_context(caller=request.caller, bases=bases, current=conversation)},
        status=status)


def _back(request: PersonRequest, *, default: str) -> HttpResponseRedirect:
    """Back to the workbench page the form names in `next`, else to `default`."""
    target = request.POST.get("next", "")
    if target.startswith("/workbench/") and url_has_allowed_host_and_scheme(
            target, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return HttpResponseRedirect(target)
    return HttpResponseRedirect(default)


urlpatterns = [
    path("conversations/", conversations_page, name="conversations"),
    path("conversations/new", conversation_new, name="conversation-new"),
    path("conversations/<int:conversation_id>/", conversation_page, name="conversation"),
    path("conversations/<int:conversation_id>/stream", conversation_stream,
         name="conversation-stream"),
    path("conversations/<int:conversation_id>/rename", conversation_rename_view,
         name="conversation-rename"),
    path("conversations/<int:conversation_id>/delete", conversation_delete_view,
         name="conversation-delete"),
    path("messages/<int:message_id>/feedback", message_feedback, name="message-feedback"),
]
