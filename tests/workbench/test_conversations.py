"""Conversations in the workbench: the list beside Ask, a thread with source cards and the
standalone query under a follow-up, asking in it (whole and streamed), rename, delete, feedback
on a message, ownership (anyone else's conversation is 404 on every path) and CSRF."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from access.callers import caller_for_user
from conversations.models import FEEDBACK_DOWN, FEEDBACK_UP, Conversation, Message
from conversations.services import conversation_create
from tests.api.http import sse_events
from traces.models import Trace

P1 = "客户 P1 工单应该怎么升级？"
P2_FOLLOW_UP = "那 P2 呢？"
QUESTION = "How long does a P1 incident have before it is escalated?"


def start(client: Client, knowledge_base: str = "") -> int:
    """A new conversation through the page's form; its id."""
    response = client.post("/workbench/conversations/new", {"knowledge_base": knowledge_base})
    assert response.status_code == 302
    match = re.fullmatch(r"/workbench/conversations/(\d+)/", response["Location"])
    assert match, response["Location"]
    return int(match.group(1))


def own(client: Client, title: str) -> Conversation:
    return conversation_create(caller=caller_for_user(client.user), title=title)


def test_the_list_shows_only_my_conversations_newest_first(reader, person, db):
    other = person("other", grants={"default": "reader"})
    older, newer = own(reader, "Older question"), own(reader, "Newer question")
    own(other, "Somebody else's question")
    Conversation.objects.filter(pk=older.pk).update(updated_at=newer.updated_at.replace(year=2020))
    page = reader.get("/workbench/conversations/").content.decode()
    assert page.index("Newer question") < page.index("Older question")
    assert "Somebody else" not in page
    # Beside the Ask page too.
    ask = reader.get("/workbench/ask/").content.decode()
    aside = ask[ask.index('<aside class="conversation-aside"'):]
    assert aside.index("Newer question") < aside.index("Older question")
    assert "Somebody else" not in aside
    assert f'href="/workbench/conversations/{newer.pk}/"' in aside


def test_a_new_conversation_keeps_its_knowledge_base(reader, db):
    conversation = Conversation.objects.get(pk=start(reader, "default"))
    assert conversation.knowledge_bases == ["default"]
    assert conversation.owner == f"user:{reader.user.pk}"
    page = reader.get(f"/workbench/conversations/{conversation.pk}/").content.decode()
    assert "Ask the first question" in page and "In Default" in page
    assert start(reader) != conversation.pk
    assert Conversation.objects.filter(knowledge_bases__isnull=True).count() == 1


def test_a_new_conversation_keeps_its_filters_and_asks_within_them(reader, sample_index):
    response = reader.post("/workbench/conversations/new",
                           {"knowledge_base": "", "folder": "runbooks", "tags": "",
                            "conditions": "status in active, draft"})
    assert response.status_code == 302
    conversation = Conversation.objects.get()
    assert conversation.filters == {"folder": "runbooks",
                                    "frontmatter": {"status": {"in": ["active", "draft"]}}}
    thread = f"/workbench/conversations/{conversation.pk}/"
    assert "filtered by folder: runbooks · status ∈ active, draft" in reader.get(
        thread).content.decode()
    conversation.filters = {"folder": "runbooks"}
    conversation.save(update_fields=["filters"])
    answered = reader.post(thread, {"question": "What do we check first when the API is slow?"})
    html = answered.content.decode()
    # Cards of an answer, or the "See also" line of a refusal: every note named is a runbook.
    sources = set(re.findall(r"(?:policies|runbooks|products|sales|support)/[^<\n,]+?\.md", html))
    assert answered.status_code == 200 and sources
    assert all(source.startswith("runbooks/") for source in sources), sources
    trace = Trace.objects.get(id=answered["X-Request-ID"])
    assert trace.parameters["filters"]


def test_a_conversations_bad_filter_line_is_named_and_nothing_is_started(reader, db):
    response = reader.post("/workbench/conversations/new",
                           {"knowledge_base": "", "conditions": "year >= 2019\nregion Yunnan"})
    html = response.content.decode()
    assert response.status_code == 422 and not Conversation.objects.exists()
    assert "The filters are not valid: line 2 is not" in html
    assert '<details class="filters" open>' in html


def test_a_base_outside_the_grants_cannot_start_a_conversation(reader, db):
    from knowledge.bases import kb_create

    kb_create(slug="secret", name="Secret base")
    response = reader.post("/workbench/conversations/new", {"knowledge_base": "secret"})
    assert response.status_code == 422 and not Conversation.objects.exists()


def test_a_two_turn_conversation_shows_the_follow_ups_standalone_query(reader, sample_index):
    conversation_id = start(reader)
    thread = f"/workbench/conversations/{conversation_id}/"
    # The first question without JavaScript: the form posts, the thread comes back answered.
    first = reader.post(thread, {"question": P1})
    html = first.content.decode()
    assert first.status_code == 200
    assert f'<p class="question-text">{P1}</p>' in html
    assert 'data-look="answer"' in html and 'class="source-card"' in html
    assert 'class="searched-as"' not in html
    asked = Trace.objects.get(id=first["X-Request-ID"])
    assert (asked.channel, asked.operation) == ("workbench", "ask")
    # The follow-up streamed, as the page's script asks it.
    response = reader.post(f"{thread}stream", {"question": P2_FOLLOW_UP})
    assert response.status_code == 200
    events = sse_events(response)
    names = [name for name, _ in events]
    assert names[0] == "status" and "delta" in names and names[-1] == "result"
    status = events[0][1]
    assert status["condensation"] == "rule" and "P2" in status["standalone_query"]
    assert "P1" not in status["standalone_query"]
    result = events[-1][1]
    assert result["look"] == "answer" and result["title"] == P1
    assert f"searched as: <q>{status['standalone_query']}</q>" in result["html"]
    streamed = Trace.objects.get(id=response["X-Request-ID"])
    assert (streamed.channel, streamed.operation) == ("workbench", "ask_stream")
    assert streamed.parameters["conversation_id"] == conversation_id

    messages = list(Message.objects.filter(conversation_id=conversation_id).order_by("id"))
    assert [message.role for message in messages] == ["user", "assistant"] * 2
    answer = messages[3]
    assert answer.standalone_query == status["standalone_query"]
    assert answer.trace_id == str(streamed.id) and answer.citations
    # The stored thread: both turns, the standalone query under the follow-up only, each
    # answer's cards with ids of their own that its [n] markers link to.
    page = reader.get(thread).content.decode()
    assert page.index(P1) < page.index(P2_FOLLOW_UP)
    assert page.count('class="searched-as"') == 1
    assert page.index(P2_FOLLOW_UP) < page.index('class="searched-as"')
    assert f"searched as: <q>{answer.standalone_query}</q>" in page
    for message in (messages[1], answer):
        assert f'id="m{message.pk}-source-1"' in page
        assert f'href="#m{message.pk}-source-1"' in page
        assert f'action="/workbench/messages/{message.pk}/feedback"' in page
    assert len(re.findall(r'<li class="source-card"', page)) == (
        len(messages[1].citations) + len(answer.citations))
    assert 'href="/workbench/chunks/' in page


def test_a_streamed_turn_brings_the_list_beside_the_thread_up_to_date(reader, sample_index):
    older = own(reader, "An older conversation")
    conversation_id = start(reader)
    thread = f"/workbench/conversations/{conversation_id}/"
    aside = reader.get(thread).content.decode()
    assert "0 messages · " in aside  # before the question
    events = sse_events(reader.post(f"{thread}stream", {"question": P1}))
    name, result = events[-1]
    assert name == "result"
    items = re.findall(r"<li>(.*?)</li>", result["conversations"], re.DOTALL)
    # The conversation just asked in comes first, titled by its question, with its two messages
    # counted; the other keeps its place and count.
    assert len(items) == 2
    assert (f'<a href="/workbench/conversations/{conversation_id}/" aria-current="page">{P1}'
            f'</a>') in items[0]
    assert "2 messages · " in items[0]
    assert f'href="/workbench/conversations/{older.pk}/">An older conversation' in items[1]
    assert "0 messages · " in items[1]
    # What the page shows after a reload is the same list.
    page = reader.get(thread).content.decode()
    listed = page[page.index('<ol class="conversation-list" id="conversation-list">'):]
    assert listed.index(P1) < listed.index("An older conversation")
    assert "2 messages · " in listed


def test_a_card_whose_passage_changed_since_the_answer_loses_its_link(reader, sample_index):
    from knowledge.models import Chunk

    conversation_id = start(reader)
    # A question answered from several notes: its answer cites more than one block.
    reader.post(f"/workbench/conversations/{conversation_id}/",
                {"question": "数据导出失败怎么办？"})
    answer = Message.objects.get(conversation_id=conversation_id, role="assistant")
    first, second = (citation["chunk_id"] for citation in answer.citations[:2])
    Chunk.objects.filter(pk=first).update(content_hash="0" * 64)
    page = reader.get(f"/workbench/conversations/{conversation_id}/").content.decode()
    # (A link may go on with the quote's offsets: ?quote_start=...)
    assert f'href="/workbench/chunks/{first}/' not in page
    assert f'href="/workbench/chunks/{second}/' in page
    assert page.count("This passage has changed or was removed since the answer.") == 1


def test_a_question_refused_before_it_is_stored_shows_its_error(reader, db):
    conversation_id = start(reader)
    # Nothing is ingested: retrieval is not ready.
    response = reader.post(f"/workbench/conversations/{conversation_id}/", {"question": P1})
    html = response.content.decode()
    assert response.status_code == 503
    assert P1 in html and 'data-look="error"' in html and "retrieval_not_ready" in html
    assert not Message.objects.exists()
    streamed = reader.post(f"/workbench/conversations/{conversation_id}/stream",
                           {"question": P1})
    assert streamed.status_code == 503
    [(name, result)] = sse_events_of(streamed)
    assert name == "result" and result["look"] == "error"
    assert "retrieval_not_ready" in result["html"]


def sse_events_of(response) -> list[tuple[str, dict]]:
    """The events of a response sent whole (a refusal before any stream)."""
    import json

    text = response.content.decode()
    return [(frame.split("\n")[0][7:], json.loads(frame.split("\n")[1][6:]))
            for frame in text.split("\n\n") if frame]


def test_an_empty_question_is_refused(reader, db):
    conversation_id = start(reader)
    assert reader.post(f"/workbench/conversations/{conversation_id}/",
                       {"question": "  "}).status_code == 422
    streamed = reader.post(f"/workbench/conversations/{conversation_id}/stream",
                           {"question": ""})
    assert streamed.status_code == 422 and sse_events_of(streamed)[0][0] == "invalid"
    assert not Message.objects.exists()


def test_the_sources_stay_when_the_model_fails(reader, sample_index, config_override):
    from tests.answering.stub_openai import StubOpenAI

    conversation_id = start(reader)
    with StubOpenAI(behaviour="status:401") as stub:
        # Slots to spare: slot files are shared with any other test run on this machine.
        config_override(llm_provider="openai-compatible", llm_base_url=stub.base_url,
                        llm_model="stub-model", llm_api_key="sk-stub", llm_max_concurrency=4,
                        llm_queue_wait_seconds=5)
        response = reader.post(f"/workbench/conversations/{conversation_id}/stream",
                               {"question": QUESTION})
        events = sse_events(response)
    names = [name for name, _ in events]
    assert response.status_code == 200 and "notice" in names and "error" not in names
    result = events[-1][1]
    assert result["look"] == "sources-only"
    assert "language model is unavailable" in result["html"]
    assert 'class="source-card"' in result["html"]
    answer = Message.objects.get(conversation_id=conversation_id, role="assistant")
    assert answer.notice["cause"] == "llm_auth_failed" and answer.citations
    # And so they do when the thread is read again.
    page = reader.get(f"/workbench/conversations/{conversation_id}/").content.decode()
    assert 'data-look="sources-only"' in page and 'class="source-card"' in page
    assert "<code>llm_auth_failed</code>" in page


def test_rename_and_delete(reader, sample_index):
    conversation_id = start(reader)
    thread = f"/workbench/conversations/{conversation_id}/"
    reader.post(thread, {"question": P1})
    renamed = reader.post(f"{thread}rename", {"title": "  P1 升级  "})
    assert renamed.status_code == 302 and renamed["Location"] == thread
    assert Conversation.objects.get(pk=conversation_id).title == "P1 升级"
    assert "<h1 id=\"conversation-title\">P1 升级</h1>" in reader.get(thread).content.decode()
    # From the list, back to the list; an empty title is refused.
    back = reader.post(f"{thread}rename", {"title": "Escalations",
                                           "next": "/workbench/conversations/?offset=0"})
    assert back["Location"] == "/workbench/conversations/?offset=0"
    assert reader.post(f"{thread}rename", {"title": " "}).status_code == 422
    elsewhere = reader.post(f"{thread}rename", {"title": "x", "next": "https://evil.example/"})
    assert elsewhere["Location"] == thread

    deleted = reader.post(f"{thread}delete")
    assert deleted.status_code == 302 and deleted["Location"] == "/workbench/conversations/"
    assert not Conversation.objects.filter(pk=conversation_id).exists()
    assert not Message.objects.filter(conversation_id=conversation_id).exists()
    assert reader.get(thread).status_code == 404


def test_feedback_is_stored_on_the_message(reader, sample_index):
    conversation_id = start(reader)
    reader.post(f"/workbench/conversations/{conversation_id}/", {"question": P1})
    question, answer = Message.objects.filter(conversation_id=conversation_id).order_by("id")
    url = f"/workbench/messages/{answer.pk}/feedback"
    done = reader.post(url, {"rating": "down", "error_type": "missing_source",
                             "comment": " no P2 "}, HTTP_HX_REQUEST="true")
    assert done.status_code == 200 and b"recorded as not helpful" in done.content
    answer.refresh_from_db()
    assert (answer.rating, answer.error_type, answer.comment) == (
        FEEDBACK_DOWN, "missing_source", "no P2")
    page = reader.get(f"/workbench/conversations/{conversation_id}/").content.decode()
    assert "You said: not helpful (the right source was not found) — “no P2”" in page
    # Without JavaScript the form posts and the thread comes back; a second vote changes it.
    again = reader.post(url, {"rating": "up", "error_type": "missing_source"})
    assert again.status_code == 302
    assert again["Location"] == (f"/workbench/conversations/{conversation_id}/"
                                 f"#message-{answer.pk}")
    answer.refresh_from_db()
    assert (answer.rating, answer.error_type) == (FEEDBACK_UP, "")
    # Only answers take feedback, with the Ask page's choices.
    assert reader.post(f"/workbench/messages/{question.pk}/feedback",
                       {"rating": "up"}).status_code == 404
    assert reader.post(url, {"rating": "meh"}).status_code == 422
    assert reader.post(url, {"rating": "down", "error_type": "bogus"}).status_code == 422


def test_another_persons_conversation_is_not_found_on_every_path(reader, person,
                                                                 sample_index):
    conversation_id = start(reader)
    thread = f"/workbench/conversations/{conversation_id}/"
    reader.post(thread, {"question": P1})
    answer = Message.objects.get(conversation_id=conversation_id, role="assistant")
    # The same grants, and even a superuser: another owner all the same.
    for other in (person("other", grants={"default": "reader"}),
                  person("root", superuser=True)):
        for path, data in ((thread, None), (thread, {"question": P2_FOLLOW_UP}),
                           (f"{thread}stream", {"question": P2_FOLLOW_UP}),
                           (f"{thread}rename", {"title": "taken"}), (f"{thread}delete", {}),
                           (f"/workbench/messages/{answer.pk}/feedback", {"rating": "up"})):
            response = other.get(path) if data is None else other.post(path, data)
            assert response.status_code == 404, (other.user.username, path)
        listed = other.get("/workbench/conversations/").content.decode()
        assert P1 not in listed
    conversation = Conversation.objects.get(pk=conversation_id)
    assert conversation.title == P1
    assert Message.objects.filter(conversation_id=conversation_id).count() == 2
    answer.refresh_from_db()
    assert answer.rating is None


def test_the_posts_need_the_csrf_token(reader, sample_index):
    conversation_id = start(reader)
    thread = f"/workbench/conversations/{conversation_id}/"
    reader.post(thread, {"question": P1})
    answer = Message.objects.get(conversation_id=conversation_id, role="assistant")
    client = Client(enforce_csrf_checks=True)
    client.force_login(get_user_model().objects.get(pk=reader.user.pk))
    page = client.get(thread)
    assert page.status_code == 200 and b'name="csrfmiddlewaretoken"' in page.content
    for path, data in (("/workbench/conversations/new", {}), (thread, {"question": P1}),
                       (f"{thread}stream", {"question": P1}), (f"{thread}rename", {"title": "t"}),
                       (f"{thread}delete", {}),
                       (f"/workbench/messages/{answer.pk}/feedback", {"rating": "up"})):
        assert client.post(path, data).status_code == 403, path
    assert Conversation.objects.count() == 1
    assert Message.objects.filter(conversation_id=conversation_id).count() == 2
    assert Conversation.objects.get(pk=conversation_id).title == P1


@pytest.mark.parametrize("path", ["/workbench/conversations/", "/workbench/conversations/1/"])
def test_the_pages_need_a_sign_in(client, db, path):
    response = client.get(path)
    assert response.status_code == 302 and response["Location"].startswith("/workbench/login/")


def test_the_thread_carries_the_strict_csp_and_no_inline_script(reader, db):
    response = reader.get(f"/workbench/conversations/{start(reader)}/")
    assert "script-src 'self'" in response["Content-Security-Policy"]
    html = response.content.decode()
    assert "<script>" not in html and " on" + "click=" not in html
    assert 'data-stream-url="/workbench/conversations/' in html


def test_a_stored_answer_shows_its_quotes_and_its_unverified_citations(reader, sample_index,
                                                                      stub_llm):
    # The thread's form asks for the whole answer at once.
    stub_llm.behaviour = "json"
    stub_llm.answer = ("客户提交的 P1 工单按以下时间线升级。 [1] "
                       "Swallows fly at eleven metres per second. [2]")
    conversation_id = start(reader)
    reader.post(f"/workbench/conversations/{conversation_id}/", {"question": QUESTION})
    answer = Message.objects.get(conversation_id=conversation_id, role="assistant")
    assert answer.citations[0]["quote"] == "客户提交的 P1 工单按以下时间线升级。"
    assert answer.citations[1]["quote"] is None and answer.unsupported_citations == 1
    page = reader.get(f"/workbench/conversations/{conversation_id}/").content.decode()
    anchor = f"m{answer.pk}-source-"
    first = page[page.index(f'id="{anchor}1"'):]
    first = first[:first.index("</li>")]
    second = page[page.index(f'id="{anchor}2"'):]
    second = second[:second.index("</li>")]
    assert "Quoted:</span> “客户提交的 P1 工单按以下时间线升级。”" in first
    start_offset = answer.citations[0]["quote_start"]
    assert f"?quote_start={start_offset}&amp;quote_end=" in first
    assert 'class="badge badge-unverified"' in second and "Quoted:" not in second
    assert "1 citation could not be verified in its source" in page


def test_a_streamed_turn_shows_its_quotes_and_its_unverified_citations(reader, sample_index,
                                                                      stub_llm):
    stub_llm.deltas = ["客户提交的 P1 工单按以下时间线升级。 [1] ",
                       "Swallows fly at eleven metres per second. [2]"]
    conversation_id = start(reader)
    events = sse_events(reader.post(f"/workbench/conversations/{conversation_id}/stream",
                                    {"question": QUESTION}))
    name, result = events[-1]
    assert name == "result" and result["look"] == "answer"
    html = result["html"]
    assert "Quoted:</span> “客户提交的 P1 工单按以下时间线升级。”" in html
    assert html.count('class="badge badge-unverified"') == 1
    assert "1 citation could not be verified in its source" in html
