"""Markdown parse benchmark: note_parse on adversarial one-paragraph notes and on a normal note.

Every note is generated at each --sizes byte count (default 5 MB, the ingest's default file-size
limit). Each adversarial note is a single paragraph on one line, except `short_lines_paragraph`,
which is a paragraph of four-character lines; each aims at the worst case of one step of the
parse (code spans, tags, wikilinks, markdown-it's block rules). Prints one JSON line per note and
size: the median of --rounds parses. No database is needed.

    .venv/bin/python bench/markdown.py
    .venv/bin/python bench/markdown.py --sizes 50000 320000 --cases unmatched_backtick_runs
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable

from _setup import ROOT

WORDS = ("latency", "deploy", "customer", "export", "policy", "incident", "escalation", "runbook",
         "database", "replica", "quota", "token", "invoice", "contract", "pipeline", "cluster")


def repeated(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def numbered(template: str, size: int) -> str:
    parts, total, number = [], 0, 0
    while total < size:
        part = template.format(number)
        parts.append(part)
        total += len(part)
        number += 1
    return "".join(parts)[:size]


def normal(size: int) -> str:
    """Headings, prose wrapped at about 80 columns, lists, tags, links, inline and fenced code."""
    rng = random.Random(1)
    parts, total, number = [], 0, 0
    while total < size:
        lines = [f"## Section {number} {rng.choice(WORDS)}", ""]
        for _ in range(rng.randint(2, 5)):
            words = rng.choices(WORDS, k=rng.randint(30, 90))
            words[rng.randrange(len(words))] = f"[[Note {rng.randrange(500)}|{rng.choice(WORDS)}]]"
            words[rng.randrange(len(words))] = f"`{rng.choice(WORDS)}()`"
            words[rng.randrange(len(words))] = f"#{rng.choice(WORDS)}"
            text = " ".join(words)
            lines += [text[start:start + 80] for start in range(0, len(text), 80)] + [""]
        lines += [f"- {rng.choice(WORDS)} [[{rng.choice(WORDS)}]]" for _ in range(3)] + [""]
        if rng.random() < 0.3:
            lines += ["```bash", "# not a heading", "kubectl get pods #notag", "```", ""]
        part = "\n".join(lines) + "\n"
        parts.append(part)
        total += len(part)
        number += 1
    return "# Normal note\n\n" + "".join(parts)[:size]


def unmatched_backtick_runs(size: int) -> str:
    """Runs of lengths 1, 2, 3, ...: no run ever finds a closer of its own length."""
    parts, total, length = [], 0, 1
    while total < size:
        parts.append("`" * length + " w ")
        total += length + 3
        length += 1
    return "".join(parts)[:size]


def mixed_backtick_runs(size: int) -> str:
    rng = random.Random(2)
    parts, total = [], 0
    while total < size:
        part = "`" * rng.randint(1, 40) + rng.choice(["", "a", "ab ", " x #t "])
        parts.append(part)
        total += len(part)
    return "".join(parts)[:size]


def long_backtick_runs(size: int) -> str:
    """Runs of 10,000 and more backticks, each length once, between words."""
    parts, total, length = [], 0, 10_000
    while total < size:
        parts.append("`" * length + " w ")
        total += length + 3
        length += 1
    return "".join(parts)[:size]


CASES: dict[str, Callable[[int], str]] = {
    "normal": normal,
    "unmatched_backtick_runs": unmatched_backtick_runs,
    "mixed_backtick_runs": mixed_backtick_runs,
    "long_backtick_runs": long_backtick_runs,
    "alternating_backtick_a": lambda size: repeated("` a", size),
    "open_double_then_singles": lambda size: "``" + repeated("` a ", size - 2),
    "wikilink_openers": lambda size: repeated("[[a ", size),
    "wikilink_aliases_of_one_target": lambda size: numbered("[[a|b{}]] ", size),
    "hash_chars": lambda size: repeated("#", size),
    "tags_dense": lambda size: repeated("#a ", size),
    "tags_distinct": lambda size: numbered("#t{} ", size),
    "short_lines_paragraph": lambda size: repeated("` a\n", size),
}


def measure(case: str, size: int, rounds: int) -> dict:
    from parsing.markdown import note_parse

    text = CASES[case](size)
    seconds = []
    for _ in range(rounds):
        started = time.perf_counter()
        note_parse(text=text)
        seconds.append(time.perf_counter() - started)
    median = statistics.median(seconds)
    return {"measurement": "note_parse", "case": case, "bytes": len(text.encode()),
            "lines": text.count("\n") + 1, "rounds": rounds, "median_seconds": round(median, 4),
            "max_seconds": round(max(seconds), 4), "mb_per_s": round(len(text) / median / 1e6, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[5 * 1024 * 1024])
    parser.add_argument("--cases", nargs="+", choices=list(CASES), default=list(CASES))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    for size in args.sizes:
        for case in args.cases:
            print(json.dumps(measure(case, size, args.rounds)), flush=True)


if __name__ == "__main__":
    main()
