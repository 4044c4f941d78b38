"""What the extractive answerer reads a question by (answering/extractive_terms.py)."""

from __future__ import annotations

import pytest

from answering.extractive_terms import (
    clean,
    covered_share,
    part_subject,
    question_is_chinese,
    question_parts,
    text_terms,
)


def test_terms_are_the_lexical_indexs_less_the_words_that_only_ask():
    assert text_terms("客户 P1 工单应该怎么升级？") == {"客户", "p1", "工单", "单应", "么升",
                                                        "升级"}
    assert text_terms("What should support do when exports fail?") == {"support", "export",
                                                                       "fail"}
    assert text_terms("`read_cache_enabled` 是多少") == {"read_cache_enabled", "read", "cach",
                                                         "enabl"}


@pytest.mark.parametrize(("question", "parts"), [
    ("RPO and RTO?", ["RPO", "RTO"]),
    ("Atlas CRM 的 CSV 导出有什么限制？每次最多导出多少行？",
     ["Atlas CRM 的 CSV 导出有什么限制", "每次最多导出多少行"]),
    ("P1、P2 和 P3 的 SLA", ["P1", "P2", "P3 的 SLA"]),
    ("那 P2 呢？", ["那 P2 呢"]),
    ("什么？", [])])
def test_a_question_is_split_into_its_clauses(question, parts):
    assert question_parts(question) == parts


def test_coverage_counts_characters_so_straddling_bigrams_are_not_missing_facts():
    # 次最 / 多导 / 少行 straddle two words; 行 stands beside function characters only.
    held = text_terms("每天最多 20 次导出，合计 100 万行")
    assert covered_share("每次最多导出多少行", held) == 4 / 6
    assert covered_share("它支持哪些区块链", text_terms("支持 SAML 2.0")) == 2 / 5
    assert covered_share("What is the RPO", text_terms("RPO：5 分钟")) == 1.0
    assert covered_share("blockchain vendor", text_terms("RPO：5 分钟")) == 0.0
    assert covered_share("什么", set()) == 1.0


@pytest.mark.parametrize(("question", "chinese"), [
    ("Atlas CRM 的 CSV 导出有什么限制", True), ("What does 升级 mean here?", False),
    ("RPO and RTO?", False), ("那 P2 呢？", True)])
def test_the_answer_language_follows_the_question(question, chinese):
    assert question_is_chinese(question) is chinese


def test_lone_surrogates_and_blanks_are_cleaned():
    assert clean("a\ud800 \n b\udfff") == "a\ufffd b\ufffd"


def test_a_part_is_shown_from_its_subject():
    assert part_subject("What is the Atlas CRM SLA") == "Atlas CRM SLA"
    assert part_subject("the blockchain vendor") == "blockchain vendor"
    assert part_subject("它支持哪些区块链") == "它支持哪些区块链"
    assert part_subject("What") == "What"
