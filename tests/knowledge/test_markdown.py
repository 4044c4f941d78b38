from __future__ import annotations

import json

from knowledge.markdown import code_mask, note_parse, tags_extract, wikilinks_extract


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
