"""The workbench's interface language: Simplified Chinese for a browser that prefers it, the
switch's choice remembered in the language cookie, English otherwise, and the API unchanged."""

from __future__ import annotations

import json

from django.conf import settings
from django.test import Client

ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-CN,zh;q=0.9,en;q=0.5"}
FR = {"HTTP_ACCEPT_LANGUAGE": "fr-FR,fr;q=0.9"}


def page(client: Client, path: str, **headers: str) -> str:
    response = client.get(path, **headers)
    assert response.status_code == 200, (path, response.status_code)
    return response.content.decode()


def test_a_chinese_browser_gets_the_ask_page_in_chinese(reader, sample_index):
    html = page(reader, "/workbench/ask/", **ZH)
    assert '<html lang="zh-hans">' in html
    assert "<h1>提问</h1>" in html and "知识库" in html and "退出登录" in html
    assert "Sign out" not in html and "<h1>Ask</h1>" not in html


def test_the_sign_in_page_follows_the_browser_too(client, db):
    html = page(client, "/workbench/login/", **ZH)
    assert '<html lang="zh-hans">' in html and "<h1>登录</h1>" in html and "用户名" in html


def test_the_conversations_and_knowledge_pages_are_in_chinese(reader, sample_index):
    conversations = page(reader, "/workbench/conversations/", **ZH)
    assert "<h1>对话</h1>" in conversations and "新建对话" in conversations
    knowledge = page(reader, "/workbench/knowledge/", **ZH)
    assert "<h1>知识库</h1>" in knowledge and "您的角色" in knowledge and "读者" in knowledge
    base = page(reader, "/workbench/knowledge/default/", **ZH)
    assert "个文档" in base and "您的角色：读者" in base


def test_english_stays_the_default_for_other_languages(reader, sample_index):
    for headers in (FR, {}):
        html = page(reader, "/workbench/ask/", **headers)
        assert '<html lang="en">' in html and "<h1>Ask</h1>" in html and "提问" not in html


def test_the_switch_remembers_the_choice_in_a_cookie(reader, sample_index):
    response = reader.post("/workbench/language/",
                           {"language": "zh-hans", "next": "/workbench/conversations/"})
    assert response.status_code == 302 and response["Location"] == "/workbench/conversations/"
    cookie = response.cookies[settings.LANGUAGE_COOKIE_NAME]
    assert cookie.value == "zh-hans" and cookie["samesite"] == "Lax"
    # The choice wins over the browser's English from now on, and switches back the same way.
    assert "<h1>对话</h1>" in page(reader, "/workbench/conversations/",
                                   HTTP_ACCEPT_LANGUAGE="en-US")
    reader.post("/workbench/language/", {"language": "en", "next": "/workbench/ask/"})
    assert "<h1>Ask</h1>" in page(reader, "/workbench/ask/", **ZH)


def test_the_switch_is_on_every_page_and_marks_the_current_language(client, db):
    html = page(client, "/workbench/login/", **ZH)
    assert 'action="/workbench/language/"' in html
    assert 'value="zh-hans" class="link" lang="zh-hans" aria-pressed="true" disabled' in html
    assert 'value="en" class="link" lang="en">English</button>' in html


def test_dates_and_the_answer_texts_follow_the_language(reader, sample_index):
    from django.utils import translation

    from answering.modes import no_answer_text
    from workbench.pages.ask import AnswerView, ScoresShown, answer_fragment

    view = AnswerView(mode="no_answer", confidence=0.12,
                      text=no_answer_text(weak_sources=["a.md"], fallback_disabled=False),
                      shown=ScoresShown(confidence=True))
    error = AnswerView(error={"code": "llm_timeout", "message": "the LLM did not answer in 60 s"})
    with translation.override("zh-hans"):
        refusal, failure = answer_fragment(view), answer_fragment(error)
    assert "本地知识库中没有找到该问题的答案。" in refusal and "另见：a.md" in refusal
    assert "The local knowledge base has no answer" not in refusal and "置信度 0.120" in refusal
    assert "语言模型回答超时。" in failure and "the LLM did not answer in 60 s" in failure
    with translation.override("en"):
        english = answer_fragment(view)
    assert "The local knowledge base has no answer to this question." in english
    assert "本地知识库" not in english and "See also: a.md" in english

    conversation = reader.post("/workbench/conversations/new", {})
    html = page(reader, conversation["Location"], **ZH)
    assert "开始于" in html and "年" in html  # Django's zh-Hans date: 2025年3月1日 14:05


def test_the_api_is_unchanged_under_a_chinese_accept_language(client, sample_index):
    plain = client.get("/health")
    chinese = client.get("/health", **ZH)
    assert json.loads(plain.content) == json.loads(chinese.content)
    assert "Content-Language" not in chinese and "Accept-Language" not in chinese.get("Vary", "")

    def search(**headers: str) -> dict:
        response = client.post("/search", data=json.dumps({"query": "Atlas"}),
                               content_type="application/json", **headers)
        assert "Content-Language" not in response
        body = json.loads(response.content)
        body.pop("trace_id")  # each request's own
        return body

    assert search(**ZH) == search()


def test_an_api_request_after_a_chinese_page_is_in_english(client, db):
    from django.utils.translation import get_language

    page(client, "/workbench/login/", **ZH)
    client.get("/health")
    assert get_language() == "en"
