"""The stateless conversation of a chat completion (conversations/openai_chat.py): turns from
the request's messages, our Sources list cut from earlier answers, and the list itself."""

from __future__ import annotations

from conversations.openai_chat import (
    ChatMessage,
    answer_without_sources,
    conversation_turns,
    sources_markdown,
)

P1 = "客户 P1 工单应该怎么升级？"
CITATIONS = [
    {"source": "policies/Support Escalation Policy.md", "heading": "P1 升级流程",
     "page_start": 3, "page_end": 4},
    {"source": "support/Common Customer Issues.md", "heading": "", "page_start": None,
     "page_end": None},
    {"source": "manuals/Guide.pdf", "heading": "Setup", "page_start": 7, "page_end": 7},
]


def test_each_question_pairs_with_the_answer_right_after_it():
    turns = conversation_turns([
        ChatMessage(role="system", text="Be brief."),
        ChatMessage(role="user", text="never answered"),
        ChatMessage(role="user", text=P1),
        ChatMessage(role="assistant", text="按时间线升级 [1]\n\nSources:\n- [1] policies/x.md"),
        ChatMessage(role="assistant", text="a second answer pairs with nothing"),
        ChatMessage(role="user", text="那 P2 呢？"),
        ChatMessage(role="assistant", text="P2 一小时内响应 [2]"),
    ])
    assert [(turn.question, turn.answer) for turn in turns] == [
        (P1, "按时间线升级 [1]"), ("那 P2 呢？", "P2 一小时内响应 [2]")]


def test_an_earlier_follow_up_carries_the_standalone_query_before_it():
    turns = conversation_turns([
        ChatMessage(role="user", text=P1), ChatMessage(role="assistant", text="a"),
        ChatMessage(role="user", text="那 P2 呢？"), ChatMessage(role="assistant", text="b")])
    assert [turn.standalone_query for turn in turns] == [P1, "客户 P2 工单应该怎么升级？"]


def test_only_the_last_sources_list_is_cut():
    text = "see Sources:\nbelow\n\nSources:\n- [1] a.md"
    assert answer_without_sources(text) == "see Sources:\nbelow"
    assert answer_without_sources("no list here") == "no list here"


def test_the_sources_list_names_the_cited_blocks_with_their_pages():
    assert sources_markdown(text="升级 [1]，另见【3】 and [1, 9], `x[20002]`",
                            citations=CITATIONS) == (
        "\n\nSources:\n"
        "- [1] policies/Support Escalation Policy.md › P1 升级流程, p. 3–4\n"
        "- [3] manuals/Guide.pdf › Setup, p. 7")


def test_an_answer_citing_nothing_lists_every_block():
    listed = sources_markdown(text="the model is unavailable", citations=CITATIONS)
    assert listed.splitlines()[3:] == [
        "- [1] policies/Support Escalation Policy.md › P1 升级流程, p. 3–4",
        "- [2] support/Common Customer Issues.md", "- [3] manuals/Guide.pdf › Setup, p. 7"]
    assert sources_markdown(text="nothing found", citations=[]) == ""
