"""A block's text as the extractive answerer's units (answering/extractive_units.py)."""

from __future__ import annotations

from answering.extractive_units import (
    BLOCK_MAX_CHARS,
    FOLLOWERS_MAX,
    UNIT_ITEM,
    UNIT_MAX_CHARS,
    UNIT_ROW,
    UNIT_SENTENCE,
    UNITS_MAX,
    block_units,
)


def kinds_and_texts(content: str) -> list[tuple[str, str]]:
    return [(unit.kind, unit.text) for unit in block_units(content)]


def test_sentences_items_and_rows_are_cut_verbatim():
    content = ("# Guide\n\nFirst sentence. 第二句。Third one!\n\n- an item\n  that goes on\n"
               "2) a numbered item\n\n| A | B |\n| --- | --- |\n| 1 | 2 |\n")
    assert kinds_and_texts(content) == [
        (UNIT_SENTENCE, "First sentence."), (UNIT_SENTENCE, "第二句。"),
        (UNIT_SENTENCE, "Third one!"), (UNIT_ITEM, "an item\n  that goes on"),
        (UNIT_ITEM, "a numbered item"), (UNIT_ROW, "| 1 | 2 |")]
    row = block_units(content)[-1]
    assert row.header == "| A | B |\n| --- | --- |" and row.headings == ("Guide",)


def test_a_hard_wrapped_sentence_keeps_its_line_breaks():
    units = block_units("The limit applies to every\nworkspace of the tenant. Next.")
    assert [unit.text for unit in units] == ["The limit applies to every\nworkspace of the tenant.",
                                             "Next."]


def test_code_tags_headings_and_the_truncation_mark_are_not_units():
    content = ("## Setup\n\n```sh\nrm -rf / # never.\n```\n\nRun it once. #runbook #oncall\n\n"
               "Kept.\n[truncated]")
    assert kinds_and_texts(content) == [(UNIT_SENTENCE, "Run it once."),
                                        (UNIT_SENTENCE, "Kept.")]


def test_a_table_without_its_header_keeps_its_rows_without_one():
    units = block_units("| P3 | 8 小时 |\n| P4 | 2 天 |")
    assert [(unit.kind, unit.text, unit.header) for unit in units] == [
        (UNIT_ROW, "| P3 | 8 小时 |", ""), (UNIT_ROW, "| P4 | 2 天 |", "")]


def test_an_announcing_sentence_takes_the_items_under_deeper_headings():
    content = ("## 升级流程\n\n客户提交的 P1 工单按以下时间线升级。English summary follows.\n\n"
               "### 呼叫\n\n1. 第一步。\n2. 第二步。\n\n### 时间线\n\n3. 第三步。\n\n"
               "升级期间每 30 分钟更新。\n\n## 其他\n\n- 无关。")
    units = block_units(content)
    texts = [unit.text for unit in units]
    announcer = units[0]
    assert [texts[position] for position in announcer.followers] == ["第一步。", "第二步。",
                                                                     "第三步。"]
    assert all(units[position].announcer == 0 for position in announcer.followers)
    assert units[1].announcer == 0  # the rest of its paragraph
    assert units[texts.index("升级期间每 30 分钟更新。")].announcer is None
    assert units[texts.index("无关。")].announcer is None


def test_a_colon_announces_and_an_item_takes_only_its_own_sub_items():
    content = ("常见原因：\n\n- 证书过期。\n- 配置如下：\n  - 错误的 ACS URL。\n"
               "  - 错误的 Entity ID。\n- 用户未分配。")
    units = block_units(content)
    texts = [unit.text for unit in units]
    assert [texts[position] for position in units[0].followers] == texts[1:]
    nested = units[texts.index("配置如下：")]
    assert [texts[position] for position in nested.followers] == ["错误的 ACS URL。",
                                                                  "错误的 Entity ID。"]
    assert units[texts.index("错误的 ACS URL。")].announcer == nested.position


def test_a_trigger_sentence_leads_the_numbered_steps_but_not_a_bullet_list():
    steps = block_units("触发条件：延迟超过 30 秒。\n\n1. 查看复制。\n2. 重建副本。")
    assert [steps[position].text for position in steps[0].followers] == ["查看复制。", "重建副本。"]
    bullets = block_units("触发条件：延迟超过 30 秒。\n\n- 查看复制。\n- 重建副本。")
    assert bullets[0].followers == []


def test_a_table_after_an_announcement_follows_it():
    units = block_units("响应时间如下：\n\n| 级别 | 首次响应 |\n| --- | --- |\n| P1 | 15 分钟 |\n")
    assert units[0].followers == [1] and units[1].kind == UNIT_ROW


def test_followers_are_bounded():
    content = "Steps:\n\n" + "\n".join(f"- step {index}" for index in range(50))
    assert len(block_units(content)[0].followers) == FOLLOWERS_MAX


def test_hostile_blocks_are_bounded():
    endless = block_units("x" * (UNIT_MAX_CHARS * 5))
    assert len(endless) == 1 and len(endless[0].text) == UNIT_MAX_CHARS
    clauses = block_units(("很长的一句，" * 200) + "。")
    assert len(clauses[0].text) <= UNIT_MAX_CHARS and clauses[0].text.endswith("，")
    many = block_units("\n\n".join(f"Sentence {index}." for index in range(BLOCK_MAX_CHARS)))
    assert len(many) == UNITS_MAX
