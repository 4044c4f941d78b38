from __future__ import annotations

import json
import random
import re

from parsing.markdown import (
    _code_spans_blank,
    code_mask,
    note_parse,
    tags_extract,
    wikilinks_extract,
)


def _paths(text: str) -> list[list[str]]:
    return [section.heading_path for section in note_parse(text=text).sections]


# --- frontmatter -------------------------------------------------------------------------------

def test_frontmatter_dates_become_iso_strings_and_stay_json_safe():
    note = note_parse(text=(
        "---\ntitle: Atlas\ncreated: 2024-03-01\nupdated: 2024-03-02 10:30:00\n"
        "nested:\n  when: [2024-01-01, 7]\n  1: one\n---\nBody\n"))
    assert note.frontmatter == {
        "title": "Atlas", "created": "2024-03-01", "updated": "2024-03-02T10:30:00",
        "nested": {"when": ["2024-01-01", 7], "1": "one"}}
    assert json.loads(json.dumps(note.frontmatter)) == note.frontmatter
    assert note.warnings == []


def test_frontmatter_non_finite_float_becomes_string():
    note = note_parse(text="---\nratio: .nan\nbig: .inf\n---\nx\n")
    assert note.frontmatter == {"ratio": "nan", "big": "inf"}


def test_frontmatter_is_not_part_of_any_section():
    note = note_parse(text="---\ntitle: Atlas\n---\n# Heading\nBody text\n")
    assert [section.source for section in note.sections] == ["# Heading\nBody text\n"]
    assert note.sections[0].line == 4


def test_frontmatter_tags_as_list_with_and_without_hash():
    note = note_parse(text="---\ntags: [project, '#Atlas', nested/area]\n---\nBody\n")
    assert note.tags == ["project", "Atlas", "nested/area"]


def test_frontmatter_tags_as_comma_and_space_separated_string():
    note = note_parse(text="---\ntags: 'crm, #sales  urgent'\n---\nBody\n")
    assert note.tags == ["crm", "sales", "urgent"]


def test_frontmatter_singular_tag_key_is_accepted():
    assert note_parse(text="---\ntag: solo\n---\nBody\n").tags == ["solo"]


def test_numeric_frontmatter_tag_is_dropped_with_warning():
    note = note_parse(text="---\ntags: [2024, y2024]\n---\nBody\n")
    assert note.tags == ["y2024"]
    assert note.warnings == ["ignored invalid frontmatter tag '2024'"]


def test_broken_yaml_gives_empty_frontmatter_and_warning_and_body_still_parsed():
    note = note_parse(text="---\ntitle: [unclosed\n---\n# Heading\nBody #tag [[Link]]\n")
    assert note.frontmatter == {}
    assert len(note.warnings) == 1
    assert note.warnings[0].startswith("invalid YAML frontmatter: ")
    assert [section.heading_path for section in note.sections] == [["Heading"]]
    assert note.sections[0].source == "# Heading\nBody #tag [[Link]]\n"
    assert note.tags == ["tag"]
    assert note.wikilinks == ["Link"]


def test_invalid_date_in_yaml_is_a_warning_not_a_crash():
    note = note_parse(text="---\ndate: 2024-13-45\n---\nBody\n")
    assert note.frontmatter == {}
    assert note.warnings[0].startswith("invalid YAML frontmatter: ")
    assert note.sections[0].source == "Body\n"


def test_non_mapping_frontmatter_is_ignored_with_warning():
    note = note_parse(text="---\n- a\n- b\n---\nBody\n")
    assert note.frontmatter == {}
    assert note.warnings == ["frontmatter is not a mapping (got list); ignored"]
    assert note.sections[0].source == "Body\n"


def test_yaml_alias_bomb_is_refused_with_warning():
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 8)]
    note = note_parse(text="---\n" + "\n".join(lines) + "\n---\nBody\n")
    assert note.frontmatter == {}
    assert note.warnings == ["frontmatter has more than 10000 values; ignored"]


def test_note_without_frontmatter_keeps_all_text_as_body():
    note = note_parse(text="Intro line\n\n# Heading\nBody\n")
    assert note.frontmatter == {}
    assert note.warnings == []
    assert [section.source for section in note.sections] == ["Intro line\n\n", "# Heading\nBody\n"]


def test_unclosed_leading_rule_is_body_not_frontmatter():
    note = note_parse(text="---\nJust text after a rule\n")
    assert note.frontmatter == {}
    assert note.sections[0].source == "---\nJust text after a rule\n"


def test_empty_frontmatter_block_is_empty_dict_without_warning():
    note = note_parse(text="---\n---\nBody\n")
    assert (note.frontmatter, note.warnings) == ({}, [])


# --- headings and sections -----------------------------------------------------------------------

def test_hash_inside_fenced_code_is_not_a_heading():
    text = "# Real\n```bash\n# not a heading\n```\nafter\n"
    note = note_parse(text=text)
    assert [section.heading_path for section in note.sections] == [["Real"]]
    assert note.sections[0].source == text


def test_setext_headings_are_sections_with_raw_heading_lines():
    note = note_parse(text="Title\n=====\nintro\n\nPart\n----\nbody\n")
    assert [section.heading_path for section in note.sections] == [["Title"], ["Title", "Part"]]
    assert note.sections[0].heading_source == "Title\n=====\n"
    assert note.sections[1].source == "Part\n----\nbody\n"
    assert [section.level for section in note.sections] == [1, 2]


def test_multi_line_setext_heading_text_is_joined_with_spaces():
    assert _paths("First line\nsecond line\n===\nbody\n") == [["First line second line"]]


def test_heading_path_is_a_stack_by_level():
    text = "# A\n### A3\n## B\n### C\n# D\n## E\n"
    assert _paths(text) == [["A"], ["A", "A3"], ["A", "B"], ["A", "B", "C"], ["D"], ["D", "E"]]


def test_atx_closing_hashes_are_not_part_of_heading_text():
    assert _paths("## Closed ##\ntext\n") == [["Closed"]]


def test_text_before_first_heading_has_empty_heading_path():
    note = note_parse(text="\n\nPreamble\n# H\nx\n")
    assert note.sections[0].heading_path == []
    assert note.sections[0].source == "Preamble\n"
    assert note.sections[0].line == 3
    assert note.sections[1].line == 4


def test_section_source_runs_to_next_heading_of_any_level():
    note = note_parse(text="# A\none\n#### Deep\ntwo\n# B\nthree")
    assert [section.source for section in note.sections] == [
        "# A\none\n", "#### Deep\ntwo\n", "# B\nthree"]
    assert [section.body for section in note.sections] == ["one\n", "two\n", "three"]


def test_heading_inside_blockquote_does_not_open_a_section():
    assert _paths("# Top\n> # quoted\nbody\n") == [["Top"]]


def test_crlf_line_endings_are_normalised():
    note = note_parse(text="# A\r\nbody\r\n# B\r\nmore\r\n")
    assert [section.source for section in note.sections] == ["# A\nbody\n", "# B\nmore\n"]


def test_block_offsets_mark_top_level_blocks_after_the_heading():
    note = note_parse(text="# H\npara one\n\n```\ncode\n\nmore\n```\n\n- item\n")
    section = note.sections[0]
    assert [section.source[offset:offset + 4] for offset in section.block_offsets] == [
        "para", "```\n", "- it"]


def test_empty_note_has_no_sections():
    assert note_parse(text="").sections == []
    assert note_parse(text="  \n\n").sections == []
    assert note_parse(text="---\ntitle: x\n---\n\n").sections == []


# --- tags ---------------------------------------------------------------------------------------

def test_inline_nested_and_cjk_tags_are_found_without_hash():
    assert note_parse(text="Work on #project/alpha and #标签 today #under_score-x\n").tags == [
        "project/alpha", "标签", "under_score-x"]


def test_numeric_only_hash_is_not_a_tag():
    assert note_parse(text="Issue #123 and #y2024 and #2024-q1\n").tags == ["y2024", "2024-q1"]


def test_hash_in_code_span_and_code_blocks_is_not_a_tag():
    text = "Use `#notag` here #real\n\n```\n#fenced\n```\n\n    #indented\n"
    assert note_parse(text=text).tags == ["real"]


def test_url_fragment_and_entity_are_not_tags():
    text = "See http://x.com/page#section and &#123; and [a](#anchor) and [[Page#Head]]\n"
    assert note_parse(text=text).tags == []


def test_tag_after_opening_bracket_or_paren_is_a_tag():
    assert note_parse(text="(#paren) [#bracket]\n").tags == ["paren", "bracket"]


def test_heading_marker_is_not_a_tag_but_tag_in_heading_is():
    assert note_parse(text="# Title\n## Notes #meeting\n###### Six\n").tags == ["meeting"]


def test_escaped_hash_is_not_a_tag():
    assert note_parse(text="Not a tag: \\#escaped\n").tags == []


def test_tags_dedupe_case_insensitively_keeping_first_spelling_frontmatter_first():
    note = note_parse(text="---\ntags: [Project]\n---\n#project #CRM #crm #Other\n")
    assert note.tags == ["Project", "CRM", "Other"]


def test_tag_stops_at_punctuation():
    assert note_parse(text="Finished #done. Also #next, then #last!\n").tags == [
        "done", "next", "last"]


def test_tags_extract_masks_code_in_a_fragment():
    assert tags_extract(text="`#no` #yes\n```\n#no2\n```\n") == ["yes"]


# --- wikilinks ----------------------------------------------------------------------------------

def test_all_wikilink_forms_give_their_target():
    text = ("[[Page]] [[path/Other|Alias]] [[Third#Heading]] [[Fourth#Heading|Shown]] "
            "![[image.png]] [[#Local heading]]\n")
    note = note_parse(text=text)
    assert note.wikilinks == ["Page", "path/Other", "Third", "Fourth", "image.png"]
    assert note.wikilink_aliases == {"path/Other": ["Alias"], "Fourth": ["Shown"]}


def test_wikilinks_dedupe_in_order_and_collect_distinct_aliases():
    note = note_parse(text="[[B]] [[A|one]] [[ A |two]] [[B]] [[A|one]]\n")
    assert note.wikilinks == ["B", "A"]
    assert note.wikilink_aliases == {"A": ["one", "two"]}


def test_wikilinks_in_code_are_ignored():
    text = "`[[InSpan]]` [[Real]]\n\n```\n[[InFence]]\n```\n\n    [[Indented]]\n"
    assert note_parse(text=text).wikilinks == ["Real"]


def test_table_escaped_pipe_alias_leaves_no_backslash_on_target():
    text = "| a | b |\n|---|---|\n| [[Page\\|Alias]] | x |\n"
    note = note_parse(text=text)
    assert note.wikilinks == ["Page"]
    assert note.wikilink_aliases == {"Page": ["Alias"]}


def test_wikilinks_extract_on_fragment_masks_code_by_default():
    links = wikilinks_extract(text="[[Kept|K]] `[[Dropped]]`\n")
    assert (links.targets, links.aliases) == (["Kept"], {"Kept": ["K"]})


def test_wikilinks_extract_without_masking_trusts_the_caller():
    assert wikilinks_extract(text="`[[Seen]]`", mask_code=False).targets == ["Seen"]


def test_code_mask_keeps_length_and_newlines():
    text = "a `[[x]]` b\n```\ncode\n```\n"
    masked = code_mask(text=text)
    assert len(masked) == len(text)
    assert masked == "a         b\n   \n    \n   \n"


def test_heading_path_holds_heading_text_without_markdown():
    note = note_parse(text="# **Atlas** CRM\n\n## Export via [[Atlas CRM FAQ|FAQ]] and `rag`\n\n"
                           "Body.\n\n## snake_case stays\n\nMore.\n")
    paths = [section.heading_path for section in note.sections]
    assert paths == [["Atlas CRM"], ["Atlas CRM", "Export via FAQ and rag"],
                     ["Atlas CRM", "snake_case stays"]]
    assert "Atlas CRM FAQ" in note.wikilinks


# --- code spans, tags and wikilinks against the regexes they replaced -----------------------------
# The old code-span regex is the reference for CommonMark code-span semantics; it was replaced
# because it is quadratic on a long paragraph (bench/markdown.py), so it lives on only here.

_CODE_SPAN_REFERENCE = re.compile(r"(?<!`)(`+)(?!`)(?:(?!\n[ \t]*\n)[\s\S])+?(?<!`)\1(?!`)")
_TAG_NOISE_REFERENCE = re.compile(r"\[\[[^\[\]\n]*\]\]|\]\([^()\n]*\)")


def _blanked(text: str) -> str:
    return "\n".join(" " * len(line) for line in text.split("\n"))


def _random_texts(seed: int, alphabet: list[str], count: int, longest: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, longest)))
            for _ in range(count)]


def _tags_reference(text: str) -> list[str]:
    text = _TAG_NOISE_REFERENCE.sub(lambda match: _blanked(match.group(0)), text)
    seen: dict[str, str] = {}
    for match in re.finditer(r"#([\w/-]+)", text):
        position, tag = match.start(), match.group(1)
        may_start = position == 0 or text[position - 1].isspace() or text[position - 1] in "([{"
        if may_start and not all(char.isdigit() for char in tag):
            seen.setdefault(tag.casefold(), tag)
    return list(seen.values())


def _wikilinks_reference(text: str) -> tuple[list[str], dict[str, list[str]]]:
    targets: dict[str, None] = {}
    aliases: dict[str, list[str]] = {}
    for match in re.finditer(r"\[\[([^\[\]\n]*)\]\]", text):
        link, _, alias = match.group(1).partition("|")
        target = link.removesuffix("\\").partition("#")[0].strip()
        if not target:
            continue
        targets.setdefault(target)
        alias = alias.strip()
        if alias and alias not in aliases.setdefault(target, []):
            aliases[target].append(alias)
    return list(targets), aliases


def test_code_spans_are_those_of_the_commonmark_regex_on_random_text():
    texts = _random_texts(7, ["`", "`", "``", "```", "a", " ", "\t", "\n"], 6000, 40)
    expected = [_CODE_SPAN_REFERENCE.sub(lambda match: _blanked(match.group(0)), text)
                for text in texts]
    assert [_code_spans_blank(text) for text in texts] == expected
    # The sample holds both kinds: texts with spans and texts whose runs all stay literal.
    changed = sum(blanked != text for blanked, text in zip(expected, texts))
    assert 1000 < changed < 5000
    assert sum("\n\n" in text and "`" in text for text in texts) > 1000


def test_tags_are_those_of_the_old_scan_on_random_text():
    alphabet = ["#", "#", "a", "B", "1", "/", "-", " ", "\n", "\u3000", "(", "[", "{", "]", ")",
                "[[", "]]", "](", "|", "é", "É", "&"]
    texts = _random_texts(11, alphabet, 6000, 30)
    expected = [_tags_reference(text) for text in texts]
    assert [tags_extract(text=text, mask_code=False) for text in texts] == expected
    assert sum(bool(tags) for tags in expected) > 500


def test_wikilinks_are_those_of_the_old_scan_on_random_text():
    alphabet = ["[[", "]]", "[[a|", "|b]]", "[", "]", "a", "A", "b", "|", "#", " ", "\\", "\n", "!"]
    texts = _random_texts(13, alphabet, 6000, 30)
    expected = [_wikilinks_reference(text) for text in texts]
    found = [wikilinks_extract(text=text, mask_code=False) for text in texts]
    assert [(links.targets, links.aliases) for links in found] == expected
    assert sum(bool(aliases) for _, aliases in expected) > 800


def test_code_span_closes_only_at_a_run_of_the_same_length():
    assert code_mask(text="`` a ` b `` c #t\n") == "            c #t\n"
    assert code_mask(text="`#a`` #b`` #c\n") == "`#a        #c\n"


def test_backtick_runs_without_closer_stay_literal_text():
    text = "`` x ` y #tag " + "".join("`" * length + " w " for length in range(3, 60)) + "\n"
    assert code_mask(text=text) == text
    assert note_parse(text=text).tags == ["tag"]


def test_code_span_crosses_a_line_but_not_a_blank_line():
    assert note_parse(text="- `a\n  #x` b\n").tags == []
    assert note_parse(text="- `a\n\n  #y` b\n").tags == ["y"]
    # The first run's only partner is past a line of a space and a tab, so it stays literal.
    assert code_mask(text="- `a\n \t\n  ` b `c`\n") == "- `a\n \t\n       c`\n"


def test_tag_right_after_a_wikilink_or_link_destination_is_a_tag():
    assert note_parse(text="[[x]]#tag [a](b)#t2 x[[y]]z#no\n").tags == ["tag", "t2"]


def test_many_aliases_of_one_target_are_kept_in_order_without_repeats():
    text = " ".join(f"[[Atlas|name {number % 1500}]]" for number in range(3000)) + "\n"
    note = note_parse(text=text)
    assert note.wikilinks == ["Atlas"]
    assert note.wikilink_aliases == {"Atlas": [f"name {number}" for number in range(1500)]}


def test_heading_too_long_to_be_real_drops_its_markup_characters():
    from parsing.markdown import HEADING_PARSE_LIMIT, heading_text

    source = "**Big** [" * (HEADING_PARSE_LIMIT // 4) + "end"
    assert heading_text(source) == " ".join(["Big"] * (HEADING_PARSE_LIMIT // 4) + ["end"])
    assert heading_text("**Export** limits") == "Export limits"  # short ones are parsed
