"""Follow-ups made standalone: the deterministic rule, when it applies, and the LLM path with
its own deadline and its fallback to the rule."""

from __future__ import annotations

import time

import pytest

from conversations.condense import (
    AS_ASKED,
    LLM,
    RULE,
    Turn,
    condense_messages,
    is_follow_up,
    rule_condense,
    standalone_query,
)
from core.config import get_config
from tests.answering.stub_openai import StubOpenAI
from tests.api.http import SECRET

P1 = "客户 P1 工单应该怎么升级？"


@pytest.mark.parametrize("question", ["那 P2 呢？", "它的首次响应要多久？", "之后要做什么？",
                                      "who approves it?", "What about disk usage?", "and p99?",
                                      "多久？"])
def test_short_and_referring_questions_are_follow_ups(question):
    assert is_follow_up(question)


@pytest.mark.parametrize("question", [P1, "数据库主库故障怎么 failover？",
                                      "What are the Atlas CRM export limits?",
                                      "P3 的响应时间是多少？", "应该联系谁处理数据库复制延迟？"])
def test_questions_that_stand_on_their_own_are_not(question):
    assert not is_follow_up(question)


def test_an_identifier_of_the_same_shape_replaces_its_counterpart():
    assert rule_condense("那 P2 呢？", previous=P1) == "客户 P2 工单应该怎么升级？"
    assert rule_condense("and ZK-12?", previous="grade of hole ZK-7 at depth") == (
        "grade of hole ZK-12 at depth")


def test_otherwise_the_key_terms_of_the_latest_standalone_question_are_carried():
    anchor = "What are the Atlas CRM export limits?"
    assert rule_condense("and how many rows can they hold?", previous=anchor, anchor=anchor) == (
        "Atlas CRM export limits many rows hold")
    # A chain of follow-ups carries the anchor's terms, not every earlier follow-up's.
    assert rule_condense("what about the API?", previous="Atlas CRM export limits many rows hold",
                         anchor=anchor) == "Atlas CRM export limits API"


def test_a_standalone_question_is_searched_as_asked_without_a_model_call(config_override):
    turns = [Turn(question=P1, standalone_query=P1, answer="escalate [1]")]
    with StubOpenAI(behaviour="json", answer="never used") as stub:
        config = config_override(llm_provider="openai-compatible", llm_base_url=stub.base_url,
                                 llm_model="m", llm_api_key=SECRET)
        condensed = standalone_query(question="数据库主库故障怎么 failover？", turns=turns,
                                     config=config)
        assert (condensed.method, len(stub.requests)) == (AS_ASKED, 0)
        assert standalone_query(question="那 P2 呢？", turns=[], config=config).method == AS_ASKED


def test_the_fake_llm_uses_the_rule():
    turns = [Turn(question=P1, standalone_query=P1, answer="")]
    condensed = standalone_query(question="那 P2 呢？", turns=turns, config=get_config())
    assert (condensed.method, condensed.query) == (RULE, "客户 P2 工单应该怎么升级？")


def test_an_llm_condenses_and_a_failing_or_slow_one_falls_back_to_the_rule(config_override):
    turns = [Turn(question=P1, standalone_query=P1, answer="L1 pages the SRE [1].")]
    with StubOpenAI(behaviour="json", answer=" “客户 P2 工单怎么升级” \n") as stub:
        config = config_override(llm_provider="openai-compatible", llm_base_url=stub.base_url,
                                 llm_model="m", llm_api_key=SECRET, llm_timeout_seconds=30.0,
                                 rag_condense_timeout_seconds=0.5)
        condensed = standalone_query(question="那 P2 呢？", turns=turns, config=config)
        assert (condensed.method, condensed.query) == (LLM, "客户 P2 工单怎么升级")
        assert stub.requests[0].body["messages"][1]["content"].endswith("那 P2 呢？")

        stub.behaviour = "status:500"
        failed = standalone_query(question="那 P2 呢？", turns=turns, config=config)
        assert (failed.method, failed.llm_error) == (RULE, "llm_upstream_error")
        assert failed.query == "客户 P2 工单应该怎么升级？"
        assert len(stub.requests) == 2  # no retry: the condensation has no time for one

        stub.behaviour, stub.hang_seconds = "hang", 5
        started = time.monotonic()
        slow = standalone_query(question="那 P2 呢？", turns=turns, config=config)
        assert (slow.method, slow.llm_error) == (RULE, "llm_timeout")
        assert time.monotonic() - started < 2.5  # RAG_CONDENSE_TIMEOUT_SECONDS, not the LLM's


def test_the_condensation_prompt_keeps_the_newest_turns_within_its_budget():
    turns = [Turn(question=f"question {n} " + "word " * 40, standalone_query="", answer="a")
             for n in range(10)]
    messages = condense_messages(question="and then?", turns=turns, budget=150)
    prompt = messages[1]["content"]
    assert "question 9" in prompt and "question 0" not in prompt
    assert prompt.endswith("Last question:\nand then?")
