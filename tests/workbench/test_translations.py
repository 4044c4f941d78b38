"""The Simplified Chinese catalogue: every string the workbench marks for translation has a
translation, its placeholders intact, and the committed .mo is the compilation of the .po (so
no machine needs GNU gettext to build or test the project)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from django.utils.translation.template import templatize

from tools.compile_messages import Entry, mo_bytes, po_parse

ROOT = Path(__file__).resolve().parents[2]
WORKBENCH = ROOT / "workbench"
PO = WORKBENCH / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.po"
GETTEXT_CALLS = {"gettext", "gettext_lazy", "_", "ngettext", "ngettext_lazy", "pgettext",
                 "pgettext_lazy"}
# What templatize makes of {% translate %} and {% blocktranslate %}: gettext(u'…'), ngettext(…).
_TEMPLATE_CALL = re.compile(r"\b(n?p?gettext)\(((?:\s*u?'(?:[^'\\]|\\.)*'\s*,?)+)")
_STRING = re.compile(r"u?('(?:[^'\\]|\\.)*')")
_PLACEHOLDER = re.compile(r"%\(\w+\)[sdr]|\{\w+\}")


def catalogue() -> list[Entry]:
    return po_parse(PO.read_text(encoding="utf-8"))[1:]  # without the header


def marked_in_templates() -> set[tuple[str | None, str]]:
    found = set()
    for template in sorted((WORKBENCH / "templates").rglob("*.html")):
        code = templatize(template.read_text(encoding="utf-8"), origin=str(template))
        for function, arguments in _TEMPLATE_CALL.findall(code):
            strings = [ast.literal_eval(text) for text in _STRING.findall(arguments)]
            context = strings.pop(0) if function.startswith(("pgettext", "npgettext")) else None
            found.add((context, strings[0]))
    return found


def marked_in_python() -> set[tuple[str | None, str]]:
    found = set()
    for module in sorted(WORKBENCH.rglob("*.py")):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in GETTEXT_CALLS):
                continue
            texts = [arg.value for arg in node.args
                     if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
            if node.func.id.startswith("pgettext"):
                found.add((texts[0], texts[1]))
            elif texts:
                found.add((None, texts[0]))
    return found


def test_the_committed_mo_is_the_compilation_of_the_po():
    assert PO.with_suffix(".mo").read_bytes() == mo_bytes(po_parse(PO.read_text("utf-8")))


def test_every_entry_is_translated_and_none_is_fuzzy():
    entries = catalogue()
    assert len(entries) > 300
    assert [entry.msgid for entry in entries if not all(entry.msgstr.values())] == []
    assert [entry.msgid for entry in entries if "fuzzy" in entry.flags] == []


def test_every_translation_keeps_the_placeholders_of_its_original():
    for entry in catalogue():
        wanted = sorted(_PLACEHOLDER.findall(entry.msgid_plural or entry.msgid))
        for text in entry.msgstr.values():
            assert sorted(_PLACEHOLDER.findall(text)) == wanted, entry.msgid


@pytest.mark.parametrize("where", ["templates", "python"])
def test_every_string_marked_in_the_workbench_is_in_the_catalogue(where):
    marked = marked_in_templates() if where == "templates" else marked_in_python()
    known = {(entry.msgctxt, entry.msgid) for entry in catalogue()}
    assert len(marked) > 20
    assert sorted(marked - known, key=str) == []


def test_a_compiled_catalogue_reads_back_with_contexts_and_plurals():
    import gettext
    import io

    compiled = gettext.GNUTranslations(io.BytesIO(PO.with_suffix(".mo").read_bytes()))
    assert compiled.gettext("Sign in") == "登录"
    assert compiled.pgettext("status", "failed") == "失败"
    assert compiled.ngettext("%(pages)s page", "%(pages)s pages", 3) == "%(pages)s 页"


def test_every_error_code_has_words_of_its_own_in_both_languages():
    from django.utils import translation

    from core.errors import ERROR_TABLE
    from workbench.answer_texts import ERROR_TEXTS

    assert set(ERROR_TEXTS) == set(ERROR_TABLE)
    with translation.override("zh-hans"):
        chinese = {code: str(text) for code, text in ERROR_TEXTS.items()}
    english = {code: str(text) for code, text in ERROR_TEXTS.items()}
    for code in ERROR_TABLE:
        assert chinese[code] != english[code], code
        assert re.search(r"[\u4e00-\u9fff]", chinese[code]), code
    assert len(set(chinese.values())) == len(chinese), "two codes must not read the same"
