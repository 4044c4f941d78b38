"""tools/wtq_to_notes.py on a small folder laid out as WikiTableQuestions is: which questions
are lookups, and the notes and question lines it writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tools.wtq_to_notes import lookup_row, wtq_to_notes

ROWS = [["Year", "Competition", "Venue", "Position"],
        ["2001", "World Youth Championships", "Debrecen, Hungary", "2nd"],
        ["2002", "Asian Games", "Busan, South Korea", "1st"],
        ["2003", "Universiade", "Daegu, South Korea", "1st"]]


@pytest.mark.parametrize("question, answer, row", [
    # Names the row (Asian Games, in no other row) and asks one of its cells.
    ("where were the asian games held?", "Busan, South Korea", 2),
    # The answer is in two rows.
    ("what position at the asian games?", "1st", None),
    # An order of rows, not a lookup.
    ("which venue came after the asian games?", "Daegu, South Korea", None),
    # Names no row.
    ("which venue is in hungary?", "Debrecen, Hungary", None),
    # A list of answers.
    ("which venues are in south korea?", "Busan, South Korea|Daegu, South Korea", None),
    # The answer is in the question.
    ("was 2001 the year of the world youth championships?", "2001", None),
])
def test_a_question_is_kept_only_when_it_looks_up_the_row_it_names(question, answer, row):
    assert lookup_row(question=question, answer=answer, rows=ROWS) == row


def test_the_notes_hold_the_tables_and_each_question_names_its_row_as_written(tmp_path: Path):
    source = tmp_path / "wtq"
    (source / "csv" / "200-csv").mkdir(parents=True)
    (source / "data").mkdir()
    (source / "misc").mkdir()
    (source / "csv" / "200-csv" / "0.csv").write_text(
        "\n".join(",".join(f'"{cell}"' for cell in row) for row in ROWS) + "\n")
    (source / "csv" / "200-csv" / "1.csv").write_text(
        '"Name","Role"\n"Aiko | Tanaka","Perception lead"\n"Marcus Webb","Platform engineer"\n')
    (source / "misc" / "table-metadata.tsv").write_text(
        "contextId\tpageId\tpageRev\ttableIndex\ttitle\theaders\tcaption\ttagAbove\ttextAbove\t"
        "tagBelow\ttextBelow\n"
        "csv/200-csv/0.csv\t7\t1\t0\tJane Runner\tCareer|Achievements\t\tp\tHer results.\t\t\n"
        "csv/200-csv/1.csv\t8\t1\t0\tTeam/Directory\t\t\th2\tnot a paragraph\t\t\n")
    header = "id\tutterance\tcontext\ttargetValue\n"
    (source / "data" / "training.tsv").write_text(
        header + "nt-1\twhere were the asian games held?\tcsv/200-csv/0.csv\tBusan, South Korea\n"
        "nt-2\twhat position at the asian games?\tcsv/200-csv/0.csv\t1st\n")
    (source / "data" / "pristine-unseen-tables.tsv").write_text(
        header + "nu-1\twhat is marcus webb's role?\tcsv/200-csv/1.csv\tPlatform engineer\n")
    counts = wtq_to_notes(source=source, target=tmp_path / "out", tables=5, per_table=3, seed=13)
    assert counts == {"questions_dev": 1, "questions_test": 1, "notes": 2, "tables": 2}
    runner = (tmp_path / "out" / "vault" / "Jane Runner.md").read_text()
    assert runner == (
        "# Jane Runner\n\n## Career / Achievements\n\nHer results.\n\n"
        "| Year | Competition | Venue | Position |\n| --- | --- | --- | --- |\n"
        "| 2001 | World Youth Championships | Debrecen, Hungary | 2nd |\n"
        "| 2002 | Asian Games | Busan, South Korea | 1st |\n"
        "| 2003 | Universiade | Daegu, South Korea | 1st |\n")
    # A slash cannot be in a file name; a pipe in a cell is escaped as Markdown writes it.
    directory = (tmp_path / "out" / "vault" / "Team-Directory.md").read_text()
    assert "| Aiko \\| Tanaka | Perception lead |" in directory
    assert "not a paragraph" not in directory
    lines = [json.loads(line) for line in
             (tmp_path / "out" / "questions.jsonl").read_text().splitlines()]
    assert [(line["id"], line["split"], line["relative_path"], line["row"]) for line in lines] == [
        ("nt-1", "dev", "Jane Runner.md", "| 2002 | Asian Games | Busan, South Korea | 1st |"),
        ("nu-1", "test", "Team-Directory.md", "| Marcus Webb | Platform engineer |")]
    assert all(line["row"] in (tmp_path / "out" / "vault" / line["relative_path"]).read_text()
               for line in lines)
