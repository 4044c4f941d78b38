"""LLM_PROVIDER=extractive (answering/extractive.py): which sentences it takes, how it completes
and lays them out, what it says is missing, its bounds, and that its citations always verify."""

from __future__ import annotations

import re
import time
from collections.abc import Iterable

import pytest

from answering.context import context_build
from answering.extractive import (
    ANSWER_MAX_CHARS,
    EXTRACTIVE_MODEL,
    NO_SOURCES_EN,
    NO_SOURCES_ZH,
    NOTHING_RELEVANT_EN,
    NOTHING_RELEVANT_ZH,
    QUOTED_MAX_CHARS,
    STREAM_PIECE_CHARS,
    ExtractiveLLMClient,
    extractive_answer,
)
from answering.extractive_units import UNIT_MAX_CHARS
from answering.llm import (
    FakeLLMClient,
    get_llm_client,
    llm_model_name,
    llm_outbound_check,
    llm_outbound_record,
)
from answering.prompts import fallback_messages, rag_messages
from answering.quotes import citations_verify
from answering.slots import llm_slot_acquire
from core.config import get_config
from parsing.chunking import note_chunk
from parsing.markdown import note_parse
from retrieval.types import SearchHit
from tests.harness import ROOT, config_changed

VAULT = ROOT / "samples" / "acme-vault"
ESCALATION = "policies/Support Escalation Policy.md"
POSTGRES = "runbooks/Postgres Incident Runbook.md"
FAQ = "products/Atlas CRM FAQ.md"
DATA = "policies/Data Handling Policy.md"
_MARKER = re.compile(r"\[(\d+)\]")


def vault_hits(relative_path: str, indexes: Iterable[int] | Iterable[str], *,
               document_id: int) -> list[SearchHit]:
    """Chunks of a sample note, as retrieval would hand them over: by index, or every chunk of
    the sections whose heading starts with one of the strings given (chunk indexes move when
    chunking changes, headings do not)."""
    note = note_parse(text=(VAULT / relative_path).read_text(encoding="utf-8"))
    chunks = note_chunk(note=note)
    wanted = list(indexes)
    if all(isinstance(item, str) for item in wanted):
        indexes = [chunk.chunk_index for chunk in chunks
                   if any(chunk.heading_path[-1].startswith(str(heading)) for heading in wanted)]
    return [SearchHit(content=chunks[index].content, source=relative_path,
                      relative_path=relative_path, heading_path=list(chunks[index].heading_path),
                      heading=chunks[index].heading_path[-1], score=0.5, chunk_index=index,
                      document_id=document_id, content_hash=f"{relative_path}-{index}")
            for index in indexes if isinstance(index, int)]


def text_hit(content: str, *, source: str = "team.md", document_id: int = 9) -> SearchHit:
    return SearchHit(content=content, source=source, relative_path=source,
                     heading_path=["Notes"], heading="Notes", score=0.5, chunk_index=0,
                     document_id=document_id, content_hash=f"{source}-{len(content)}")


def asked(question: str, hits: list[SearchHit], *,
          history: list[dict[str, str]] | None = None) -> tuple[str, list[str]]:
    """The extractive answer to `question` over `hits`, and the blocks' texts."""
    context = context_build(hits=hits, token_budget=4000)
    messages = rag_messages(question=question, context_text=context.text, history=history or [])
    return ExtractiveLLMClient().complete(messages=messages), context.contents


def cited(answer: str) -> set[int]:
    return {int(number) for number in _MARKER.findall(answer)}


def p1_hits() -> list[SearchHit]:
    return [*vault_hits(ESCALATION, ["P1 升级流程", "呼叫与首次响应", "升级时间线"],
                       document_id=1), *vault_hits(FAQ, [7], document_id=2)]


def test_the_p1_timeline_comes_with_the_sentence_that_announces_it():
    answer, _ = asked("客户 P1 工单应该怎么升级？", p1_hits())
    steps = ["**T+0**", "**T+15 分钟内**", "**T+30 分钟**", "**T+60 分钟**", "**T+2 小时**"]
    places = [answer.index(f"- {step}") for step in steps]
    assert answer.startswith("客户提交的 P1 工单按以下时间线升级。 [1]")
    assert places == sorted(places)
    assert cited(answer) == {1}  # the password FAQ shares no term: never cited


def test_an_english_question_picks_its_sentence_and_the_timeline_it_summarises():
    answer, _ = asked("How does escalation work for a customer P1 ticket?", p1_hits())
    assert "English summary: a customer P1 ticket is escalated" in answer
    assert "- **T+30 分钟**" in answer and "- **T+2 小时**" in answer
    assert cited(answer) == {1}


def test_rpo_and_rto_is_the_line_that_says_them_not_the_cluster_layout():
    answer, _ = asked("RPO and RTO?", vault_hits(POSTGRES, [0, 1, 5], document_id=3))
    assert answer == "- RPO（恢复点目标）：5 分钟；RTO（恢复时间目标）：30 分钟。 [1]"


def test_a_follow_up_quotes_the_p2_lines_and_not_an_unrelated_faq():
    hits = [*vault_hits(ESCALATION, ["其他优先级", "响应 SLA"], document_id=1),
            *vault_hits(FAQ, [7], document_id=2)]
    history = [{"role": "user", "content": "客户 P1 工单应该怎么升级？"},
               {"role": "assistant", "content": "客户提交的 P1 工单按以下时间线升级。"}]
    answer, _ = asked("那 P2 呢？", hits, history=history)
    assert "**P2（High）**：核心功能严重受损但有绕过方案" in answer
    assert "| P2 | 1 小时 | 每 4 小时 | 7×24 [1] |" in answer
    assert "P1 |" not in answer and "P3" not in answer
    assert cited(answer) == {1}


def test_a_table_row_is_quoted_under_its_header():
    team = ("Our robotics team:\n\n| Name | Role | City |\n| --- | --- | --- |\n"
            "| Aiko Tanaka | Perception lead | Tokyo |\n| Ben Ode | Planning lead | Lagos |\n"
            "| Cai Lin | Controls engineer | Suzhou |\n")
    answer, _ = asked("Who is the perception lead?", [text_hit(team)])
    assert answer == ("| Name | Role | City |\n| --- | --- | --- |\n"
                      "| Aiko Tanaka | Perception lead | Tokyo [1] |")


def test_a_list_item_brings_the_sentence_that_introduces_its_list():
    answer, _ = asked("哪些客户数据不能发送给外部模型？",
                      vault_hits(DATA, ["外部模型与", "禁止发送"], document_id=4))
    lead = answer.index("以下客户数据**一律不得**发送、粘贴或上传到外部模型")
    items = [answer.index(f"- **{item}**") for item in ("PII 个人信息", "凭据 Credentials",
                                                         "合同数据 Contract data", "工单内容")]
    assert [lead, *items] == sorted([lead, *items])


def test_a_trigger_sentence_brings_the_numbered_steps_after_it():
    answer, _ = asked("Postgres 副本复制延迟过高时怎么处理？",
                      vault_hits(POSTGRES, [1, 2], document_id=3))
    assert "触发条件：副本复制延迟（replication lag）超过 30 秒持续 5 分钟。 [1]" in answer
    assert "`patronictl reinit`" in answer and "pg_stat_replication" in answer


def test_an_uncovered_part_of_a_chinese_question_is_named():
    answer, _ = asked("Atlas CRM 的导出上限是多少，以及它支持哪些区块链？",
                      vault_hits(FAQ, [1, 2], document_id=2))
    assert "单次导出上限（export limit）为 **100,000 行**" in answer
    assert answer.endswith("\n\n当前知识库证据不足：它支持哪些区块链。")


def test_an_uncovered_part_of_an_english_question_is_named():
    answer, _ = asked("What is the RPO and the blockchain vendor?",
                      vault_hits(POSTGRES, [1], document_id=3))
    assert answer.startswith("- RPO（恢复点目标）：5 分钟")
    assert answer.endswith(
        "\n\nThe knowledge base does not contain enough evidence about blockchain vendor.")


@pytest.mark.parametrize(("question", "expected"), [
    ("毛氏红烧肉如何做？", NOTHING_RELEVANT_ZH),
    ("How do I train an MLP classifier in JAX?", NOTHING_RELEVANT_EN)])
def test_sources_without_anything_relevant_are_said_to_be_so_without_a_citation(question,
                                                                                 expected):
    answer, _ = asked(question, p1_hits())
    assert answer == expected


def test_an_entity_named_by_the_document_alone_is_no_answer():
    # "Atlas CRM" names the note; a sentence holding only that name says nothing about the SLA.
    hits = vault_hits("products/Atlas CRM.md", [2, 3], document_id=5)
    answer, _ = asked("What is the Atlas CRM SLA and uptime commitment?", hits)
    assert answer == NOTHING_RELEVANT_EN


@pytest.mark.parametrize(("question", "expected"), [
    ("这个问题没有来源吗？", NO_SOURCES_ZH), ("Is there any source?", NO_SOURCES_EN)])
def test_a_prompt_without_sources_is_answered_in_its_language(question, expected):
    assert extractive_answer(messages=fallback_messages(question=question)) == expected
    assert extractive_answer(messages=[]) == NO_SOURCES_EN


def test_the_answer_stays_within_its_bound():
    words = ["amber", "basalt", "cobalt", "delta", "ember", "fjord", "garnet", "harbor", "indigo",
             "jasper", "kelp", "lumen", "marble", "nectar", "onyx", "pewter", "quartz", "russet"]

    def region(index: int) -> str:
        return " ".join(words[(index + step * 5) % len(words)] for step in range(4))

    paragraphs = "\n\n".join(f"The export limit of {region(index)} is {index} rows."
                               for index in range(200))
    answer, _ = asked("What is the export limit?", [text_hit(paragraphs)])
    quoted = answer.split("\n\nThe knowledge base")[0]
    assert len(quoted) <= QUOTED_MAX_CHARS and len(answer) <= ANSWER_MAX_CHARS
    assert len(cited(answer)) == 1 and answer.count("[1]") >= 5


def long_steps() -> SearchHit:
    filler = ("the duty manager checks the dashboards, writes a short note in the incident channel "
              "and waits for the next update from the responders on call")
    steps = [f"{step}. At step {step} {filler} number {step}." for step in range(1, 11)]
    steps[7] = ("8. At step 8 the CTO is told about the escalation and a status page notice "
                "goes out.")
    return text_hit("Escalation goes as follows:\n\n" + "\n".join(steps))


def test_a_list_too_long_to_fit_is_shown_from_its_start_without_gaps():
    answer, _ = asked("How does escalation go as follows?", [long_steps()])
    shown = [int(step) for step in re.findall(r"^- At step (\d+) ", answer, re.MULTILINE)]
    assert answer.startswith("Escalation goes as follows: [1]")
    assert shown == list(range(1, len(shown) + 1)) and 2 <= len(shown) < 10
    assert len(answer) <= QUOTED_MAX_CHARS


def test_a_late_step_is_quoted_alone_rather_than_after_a_cut_list():
    answer, _ = asked("When is the CTO told about the escalation?", [long_steps()])
    assert answer == ("- At step 8 the CTO is told about the escalation and a status page notice "
                      "goes out. [1]")


def test_an_endless_sentence_is_cut_and_answered_quickly():
    endless = "导出上限" + "非常长的一句话没有任何标点" * 20_000
    started = time.perf_counter()
    answer, contents = asked("导出上限是多少？", [text_hit(endless)])
    assert time.perf_counter() - started < 10
    quoted = answer.split(" [1]")[0]
    assert len(quoted) <= UNIT_MAX_CHARS and contents[0].startswith(quoted)


def test_lone_surrogates_in_the_question_never_reach_the_answer():
    answer, _ = asked("Atlas CRM 的导出上限\ud800是多少，以及它支持哪些区块链\udfff？",
                      vault_hits(FAQ, [1], document_id=2))
    answer.encode("utf-8")  # raises on a lone surrogate
    assert "\ufffd" in answer.split("\n\n")[-1]


def test_a_source_sentence_that_looks_like_a_citation_is_never_quoted():
    notes = ("The export limit is 100,000 rows, see [2] for details.\n\n"
             "The export limit for Enterprise is 500,000 rows.")
    answer, _ = asked("What is the export limit?", [text_hit(notes)])
    assert answer == "The export limit for Enterprise is 500,000 rows. [1]"


def test_it_is_deterministic():
    first, _ = asked("How does escalation work for a customer P1 ticket?", p1_hits())
    second, _ = asked("How does escalation work for a customer P1 ticket?", p1_hits())
    assert first == second


QUESTIONS = [("客户 P1 工单应该怎么升级？", p1_hits),
             ("How does escalation work for a customer P1 ticket?", p1_hits),
             ("RPO and RTO?", lambda: vault_hits(POSTGRES, range(7), document_id=3)),
             ("每日导出配额是多少？超过配额后怎么办？",
              lambda: vault_hits(FAQ, range(10), document_id=2)),
             ("哪些客户数据不能发送给外部模型？",
              lambda: vault_hits(DATA, ["数据分级", "外部模型与", "禁止发送"],
                                        document_id=4)),
             ("What are the response SLAs of P1 and P2?",
              lambda: vault_hits(ESCALATION, range(10), document_id=1))]


@pytest.mark.parametrize(("question", "hits"), QUESTIONS)
def test_every_quoted_sentence_is_in_the_block_it_cites(question, hits):
    answer, contents = asked(question, list(hits()))
    quotes, unsupported = citations_verify(answer=answer, block_texts=contents)
    assert unsupported == 0 and any(quotes)
    markers = list(_MARKER.finditer(answer))
    assert markers
    start = 0
    for marker in markers:
        block = " ".join(contents[int(marker.group(1)) - 1].split())
        for line in answer[start:marker.start()].split("\n"):
            text = re.sub(r"^(?:- )", "", line.strip()).rstrip(" |")
            if re.search(r"\w", text):
                assert " ".join(text.split()) in block
        start = marker.end()


def test_the_stream_is_the_answer_in_small_pieces():
    context = context_build(hits=p1_hits(), token_budget=4000)
    messages = rag_messages(question="客户 P1 工单应该怎么升级？", context_text=context.text)
    client = ExtractiveLLMClient()
    pieces = list(client.stream(messages=messages))
    assert "".join(pieces) == client.complete(messages=messages)
    assert len(pieces) > 20 and all(len(piece.strip()) <= STREAM_PIECE_CHARS for piece in pieces)
    assert client.last_usage is None


def test_the_provider_is_chosen_by_the_setting_and_stays_on_this_machine():
    base = get_config()
    config = config_changed(base, LLM_PROVIDER="extractive")
    assert isinstance(get_llm_client(config=config), ExtractiveLLMClient)
    assert llm_model_name(config=config) == f"extractive/{EXTRACTIVE_MODEL}"
    # No base's outbound policy is even read (no database here): nothing leaves this process.
    llm_outbound_check(config=config, what="the answer's context", knowledge_bases=["default"])
    assert llm_outbound_record(config=config, messages=[{"role": "user", "content": "x"}]) is None
    assert llm_slot_acquire(config=config) is None
    fake = config_changed(base, LLM_PROVIDER="fake")
    assert isinstance(get_llm_client(config=fake), FakeLLMClient)
    assert llm_model_name(config=fake) == f"fake/{fake.llm_model or 'fake'}"
