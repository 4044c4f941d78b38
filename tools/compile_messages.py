"""Compiles the workbench's translations (workbench/locale/*/LC_MESSAGES/django.po) into the
.mo files Django reads, in Python alone: the machines that build and test the project need not
have GNU gettext. The output is deterministic (entries sorted, no hash table, as Python's own
Tools/i18n/msgfmt.py writes them), so tests/workbench/test_translations.py can check that each
committed .mo is the compilation of its .po.

    python tools/compile_messages.py          # rewrite every .mo
    python tools/compile_messages.py --check  # exit 1 if one is missing or stale

Extract new strings first with `django-admin makemessages -l zh_Hans --no-location
--no-obsolete` run in workbench/ (that step needs GNU gettext's xgettext)."""

from __future__ import annotations

import argparse
import ast
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCALE = ROOT / "workbench" / "locale"


@dataclass
class Entry:
    msgid: str = ""
    msgid_plural: str | None = None
    msgctxt: str | None = None
    msgstr: dict[int, str] = field(default_factory=dict)  # plural index -> text (0 alone)
    flags: set[str] = field(default_factory=set)


def po_parse(text: str) -> list[Entry]:
    """The entries of a .po file, its header (msgid "") first."""
    entries: list[Entry] = []
    entry = Entry()
    section: tuple[str, int] | None = None
    started = False

    def finish() -> None:
        nonlocal entry, started
        if started:
            entries.append(entry)
        entry, started = Entry(), False

    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line.startswith("#,"):
            if started and section is not None and section[0] == "msgstr":
                finish()
            entry.flags.update(flag.strip() for flag in line[2:].split(","))
            continue
        if not line or line.startswith("#"):
            continue
        keyword, _, rest = line.partition(" ")
        if line.startswith('"'):
            if section is None:
                raise ValueError(f"line {number}: a string outside an entry")
            _append(entry, section, _unquote(line, number))
            continue
        if keyword in ("msgctxt", "msgid") and started and section and section[0] == "msgstr":
            finish()
        if keyword == "msgctxt":
            section, entry.msgctxt = ("msgctxt", 0), ""
        elif keyword == "msgid":
            section = ("msgid", 0)
        elif keyword == "msgid_plural":
            section, entry.msgid_plural = ("msgid_plural", 0), ""
        elif keyword == "msgstr":
            section = ("msgstr", 0)
            entry.msgstr[0] = ""
        elif keyword.startswith("msgstr[") and keyword.endswith("]"):
            index = int(keyword[7:-1])
            section = ("msgstr", index)
            entry.msgstr[index] = ""
        else:
            raise ValueError(f"line {number}: unknown keyword {keyword!r}")
        started = True
        _append(entry, section, _unquote(rest.strip(), number))
    finish()
    return entries


def _unquote(text: str, number: int) -> str:
    if not (len(text) >= 2 and text.startswith('"') and text.endswith('"')):
        raise ValueError(f"line {number}: expected a quoted string, got {text!r}")
    return ast.literal_eval(text)


def _append(entry: Entry, section: tuple[str, int], text: str) -> None:
    name, index = section
    if name == "msgctxt":
        entry.msgctxt = (entry.msgctxt or "") + text
    elif name == "msgid":
        entry.msgid += text
    elif name == "msgid_plural":
        entry.msgid_plural = (entry.msgid_plural or "") + text
    else:
        entry.msgstr[index] += text


def mo_bytes(entries: list[Entry]) -> bytes:
    """The GNU .mo of `entries` (fuzzy and untranslated ones left out, as msgfmt does)."""
    messages: dict[bytes, bytes] = {}
    for entry in entries:
        if "fuzzy" in entry.flags and entry.msgid:
            continue
        if not any(entry.msgstr.values()):
            continue
        key = entry.msgid
        if entry.msgid_plural is not None:
            key += "\0" + entry.msgid_plural
        if entry.msgctxt is not None:
            key = entry.msgctxt + "\x04" + key
        value = "\0".join(entry.msgstr[index] for index in sorted(entry.msgstr))
        messages[key.encode("utf-8")] = value.encode("utf-8")
    keys = sorted(messages)
    ids = strs = b""
    offsets = []
    for key in keys:
        offsets.append((len(ids), len(key), len(strs), len(messages[key])))
        ids += key + b"\0"
        strs += messages[key] + b"\0"
    count = len(keys)
    ids_start = 7 * 4 + count * 16
    strs_start = ids_start + len(ids)
    key_table = [value for start, length, _, _ in offsets for value in (length, start + ids_start)]
    value_table = [value for _, _, start, length in offsets
                   for value in (length, start + strs_start)]
    header = struct.pack("Iiiiiii", 0x950412DE, 0, count, 7 * 4, 7 * 4 + count * 8, 0, 0)
    return (header + struct.pack(f"{len(key_table)}i", *key_table)
            + struct.pack(f"{len(value_table)}i", *value_table) + ids + strs)


def po_files() -> list[Path]:
    return sorted(LOCALE.glob("*/LC_MESSAGES/django.po"))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check the .mo files")
    args = parser.parse_args(argv)
    stale = []
    for po in po_files():
        compiled = mo_bytes(po_parse(po.read_text(encoding="utf-8")))
        mo = po.with_suffix(".mo")
        if args.check:
            if not mo.exists() or mo.read_bytes() != compiled:
                stale.append(mo)
        else:
            mo.write_bytes(compiled)
            print(f"wrote {mo.relative_to(ROOT)}")
    for mo in stale:
        print(f"stale: {mo.relative_to(ROOT)} (run python tools/compile_messages.py)",
              file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
