"""Turn WikiTableQuestions into a vault of table notes and a file of row questions, for
bench/tables.py.

WikiTableQuestions (Pasupat and Liang, ACL 2015; CC BY-SA 4.0;
github.com/ppasupat/WikiTableQuestions) holds 2,108 Wikipedia tables (`csv/`, with each table's
page title, section and the text around it in `misc/table-metadata.tsv`) and 22,033 questions
that people wrote about them, with their answers (`data/*.tsv`). The tables of
`pristine-unseen-tables.tsv` never appear in `training.tsv`, which gives two splits with no
table in common: `dev` (training questions) for choosing anything, `test` (unseen tables) for
reporting.

Only lookup questions are kept: the answer is a single value found in exactly one cell of the
table, the question names another cell of that same row which no other row holds (the row it
asks about), the question does not contain the answer, and it has none of the words of a
comparison or an order of rows (`previous`, `most`, `after`, ...). Of each sampled table at
most `--per-table` such questions are kept (a seeded sample), so that a few tables with many
questions do not weigh most.

`--tables N` tables are sampled per split (seeded, among the tables with a lookup question);
each becomes one note of the vault, named after its page (tables of the same page share a note,
each under its own section):

    # <page title>

    ## <section of the page>

    <the text above the table on the page, when there is one>

    | header | ... |
    | --- | ... |
    | cell | ... |

`questions.jsonl` holds one line per question: id, split, question, answer, the note's
relative path and `row`, the answer's row exactly as the note writes it (the unit a row-level
hit must hold). The same input, N and seed always give the same files:

    .venv/bin/python tools/wtq_to_notes.py /data/WikiTableQuestions .local/tables/wtq \\
        --tables 200 --seed 13
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import re
import sys
import unicodedata
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

SPLITS = {"dev": "training.tsv", "test": "pristine-unseen-tables.tsv"}
# Words of questions about other rows than the one they name: an order, an extreme, a
# difference, a comparison. (`how many`, `total`, `only` stay: "how many votes did Bryan McLeod
# get?" reads one cell of the row it names.)
RELATIONAL_WORDS = frozenset((
    "previous", "next", "before", "after", "above", "below", "between", "first", "last", "top",
    "bottom", "most", "least", "highest", "lowest", "largest", "smallest", "biggest", "longest",
    "shortest", "earliest", "latest", "oldest", "youngest", "difference", "than", "consecutive",
    "times", "combined", "average", "besides", "except", "other", "same"))
# A cell names a row only when it is at least this long (`1`, `2nd`, `a` name nothing).
MIN_NAMING_CHARS = 3
TITLE_MAX_CHARS = 120
_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"[a-z]+")
_UNSAFE_NAME = re.compile(r"[\\/:*?\"<>|#^\[\]\x00-\x1f]+")


@dataclass(frozen=True)
class Table:
    context: str  # `csv/204-csv/590.csv`
    page: str
    title: str
    section: str
    above: str
    rows: list[list[str]]  # the header row first


@dataclass(frozen=True)
class Question:
    id: str
    split: str
    question: str
    answer: str
    context: str
    row: int  # index into Table.rows


def normal(text: str) -> str:
    """Lower case, NFKC, whitespace collapsed: how cells and questions are compared."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text).lower()).strip()


def _contains(haystack: str, needle: str) -> bool:
    """Whether `needle` occurs in `haystack` and not inside a longer word or number."""
    return re.search(rf"(?<!\w){re.escape(needle)}(?!\w)", haystack) is not None


def lookup_row(*, question: str, answer: str, rows: list[list[str]]) -> int | None:
    """The row a lookup question asks about (see the module's docstring), else None."""
    asked, wanted = normal(question), normal(answer)
    if not wanted or "|" in answer or not RELATIONAL_WORDS.isdisjoint(_WORD.findall(asked)):
        return None
    if _contains(asked, wanted):
        return None
    found = [(index, column) for index, row in enumerate(rows[1:], start=1)
             for column, cell in enumerate(row) if normal(cell) == wanted]
    if len(found) != 1:
        return None
    (index, column), = found
    elsewhere: dict[str, int] = defaultdict(int)
    for other in rows[1:]:
        for cell in {normal(cell) for cell in other}:
            elsewhere[cell] += 1
    for number, cell in enumerate(rows[index]):
        value = normal(cell)
        if (number != column and len(value) >= MIN_NAMING_CHARS and elsewhere[value] == 1
                and _contains(asked, value)):
            return index
    return None


def table_read(folder: Path, context: str, metadata: dict[str, dict[str, str]]) -> Table:
    """One table with its page's title, section and the text above it."""
    with (folder / context).open(encoding="utf-8", newline="") as handle:
        rows = [[_SPACE.sub(" ", cell).strip() for cell in row]
                for row in csv.reader(handle, escapechar="\\", doublequote=False)]
    meta = metadata.get(context, {})
    return Table(context=context, page=meta.get("pageId") or context,
                 title=(meta.get("title") or Path(context).stem).strip(),
                 section=" / ".join(part for part in (meta.get("headers") or "").split("|")
                                    if part.strip()),
                 above=(meta.get("textAbove") or "").strip() if meta.get("tagAbove") == "p"
                 else "", rows=[row for row in rows if any(row)])


def questions_read(folder: Path, split: str) -> list[tuple[str, str, str, str]]:
    """(id, question, table, answer) of every question of a split's file."""
    with (folder / "data" / SPLITS[split]).open(encoding="utf-8", newline="") as handle:
        lines = list(csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [(line[0], _tsv_unescape(line[1]), line[2], _tsv_unescape(line[3]))
            for line in lines[1:] if len(line) >= 4]


def _tsv_unescape(text: str) -> str:
    return text.replace("\\n", " ").replace("\\p", "|").replace("\\\\", "\\")


def markdown_row(cells: list[str], width: int) -> str:
    padded = [cell.replace("|", "\\|") for cell in cells] + [""] * (width - len(cells))
    return "| " + " | ".join(padded) + " |"


def table_markdown(table: Table) -> list[str]:
    """The table's lines as the note writes them: header, delimiter, rows."""
    width = max(len(row) for row in table.rows)
    return [markdown_row(table.rows[0], width), "| " + " | ".join(["---"] * width) + " |",
            *(markdown_row(row, width) for row in table.rows[1:])]


def note_name(title: str, taken: set[str], fallback: str) -> str:
    """A file name for the note of `title`, unique (case-insensitively) among `taken`."""
    base = _UNSAFE_NAME.sub("-", title).strip(" .-")[:TITLE_MAX_CHARS] or fallback
    name = f"{base}.md"
    if name.lower() in taken:
        name = f"{base} ({fallback}).md"
    taken.add(name.lower())
    return name


def wtq_to_notes(*, source: Path, target: Path, tables: int, per_table: int,
                 seed: int) -> dict[str, int]:
    """Write the vault and questions.jsonl; returns counts of what was written."""
    with (source / "misc" / "table-metadata.tsv").open(encoding="utf-8", newline="") as handle:
        metadata = {row["contextId"]: row for row in
                    csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)}
    rng = random.Random(seed)
    loaded: dict[str, Table] = {}
    chosen: list[Question] = []
    for split in SPLITS:
        by_table: dict[str, list[Question]] = defaultdict(list)
        for question_id, text, context, answer in questions_read(source, split):
            if context not in loaded:
                loaded[context] = table_read(source, context, metadata)
            row = lookup_row(question=text, answer=answer, rows=loaded[context].rows)
            if row is not None:
                by_table[context].append(Question(id=question_id, split=split, question=text,
                                                  answer=answer, context=context, row=row))
        sampled = sorted(rng.sample(sorted(by_table), min(tables, len(by_table))))
        for context in sampled:
            asked = by_table[context]
            chosen.extend(sorted(rng.sample(asked, min(per_table, len(asked))),
                                 key=lambda item: item.id))
    pages: dict[str, list[Table]] = defaultdict(list)
    for context in sorted({question.context for question in chosen}):
        pages[loaded[context].page].append(loaded[context])
    vault = target / "vault"
    vault.mkdir(parents=True, exist_ok=True)
    taken: set[str] = set()
    where: dict[str, tuple[str, list[str]]] = {}
    for page_tables in pages.values():
        first = page_tables[0]
        name = note_name(first.title, taken, Path(first.context).stem)
        parts = [f"# {first.title}"]
        for table in page_tables:
            lines = table_markdown(table)
            where[table.context] = (name, lines)
            if table.section:
                parts.append(f"## {table.section}")
            if table.above:
                parts.append(table.above)
            parts.append("\n".join(lines))
        (vault / name).write_text("\n\n".join(parts) + "\n", encoding="utf-8")
    with (target / "questions.jsonl").open("w", encoding="utf-8") as out:
        for question in chosen:
            name, lines = where[question.context]
            out.write(json.dumps({"id": question.id, "split": question.split,
                                  "question": question.question, "answer": question.answer,
                                  "relative_path": name, "table": question.context,
                                  "row": lines[question.row + 1]}, ensure_ascii=False) + "\n")
    counts = {f"questions_{split}": sum(1 for q in chosen if q.split == split)
              for split in SPLITS}
    counts["notes"] = len(pages)
    counts["tables"] = len(where)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", type=Path, help="a WikiTableQuestions folder")
    parser.add_argument("target", type=Path, help="the folder to write (vault/, questions.jsonl)")
    parser.add_argument("--tables", type=int, default=200, help="tables per split")
    parser.add_argument("--per-table", type=int, default=3, help="questions per table at most")
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args()
    if (args.target / "vault").exists():
        sys.exit(f"{args.target / 'vault'} exists; choose a new folder")
    counts = wtq_to_notes(source=args.source, target=args.target, tables=args.tables,
                          per_table=args.per_table, seed=args.seed)
    print(json.dumps(counts))


if __name__ == "__main__":
    main()
