"""Turn a SQuAD-style reading-comprehension file into a BEIR folder for `rag eval --beir`.

Each paragraph (`context`) becomes a document (its `id`, or `<article>-<index>` without one;
the article's title as its title), each question a query whose one relevant document is its
paragraph. `--questions N` keeps a seeded random sample of N questions (all questions sorted by
id, `random.Random(seed).sample`, the sample sorted by id again), so the same file, N and seed
always give the same collection. This is how the Chinese collection of docs/benchmarks.md is made
from CMRC 2018 (`cmrc2018_dev.json`: 300 questions, split test; `cmrc2018_train.json`: 600,
split train, for fitting):

    .venv/bin/python tools/squad_to_beir.py cmrc2018_dev.json /data/cmrc2018 \\
        --split test --questions 300 --seed 13
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path


def squad_to_beir(*, source: Path, target: Path, split: str, questions: int | None,
                  seed: int) -> tuple[int, int]:
    """Write the BEIR folder; returns (documents, queries) written."""
    data = json.loads(source.read_text(encoding="utf-8"))
    articles = data["data"] if isinstance(data, dict) else data
    documents: dict[str, dict[str, str]] = {}
    asked: list[tuple[str, str, str]] = []  # question id, question, paragraph id
    for article_index, article in enumerate(articles):
        title = str(article.get("title") or "")
        for index, paragraph in enumerate(article.get("paragraphs", [])):
            paragraph_id = str(paragraph.get("id") or f"{article_index}-{index}")
            if paragraph_id in documents:
                raise ValueError(f"paragraph id {paragraph_id!r} appears twice")
            documents[paragraph_id] = {"_id": paragraph_id, "title": title,
                                       "text": paragraph["context"]}
            asked.extend((str(qa["id"]), qa["question"], paragraph_id)
                         for qa in paragraph.get("qas", []))
    asked.sort()
    if questions is not None and questions < len(asked):
        asked = sorted(random.Random(seed).sample(asked, questions))
    (target / "qrels").mkdir(parents=True, exist_ok=True)
    with (target / "corpus.jsonl").open("w", encoding="utf-8") as corpus:
        for document in documents.values():
            corpus.write(json.dumps(document, ensure_ascii=False) + "\n")
    with (target / "queries.jsonl").open("w", encoding="utf-8") as queries:
        for question_id, question, _ in asked:
            queries.write(json.dumps({"_id": question_id, "text": question},
                                     ensure_ascii=False) + "\n")
    with (target / "qrels" / f"{split}.tsv").open("w", encoding="utf-8") as qrels:
        qrels.write("query-id\tcorpus-id\tscore\n")
        for question_id, _, paragraph_id in asked:
            qrels.write(f"{question_id}\t{paragraph_id}\t1\n")
    return len(documents), len(asked)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", type=Path)
    parser.add_argument("target", type=Path)
    parser.add_argument("--split", default="test")
    parser.add_argument("--questions", type=int, default=None)
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args()
    documents, queries = squad_to_beir(source=args.source, target=args.target, split=args.split,
                                       questions=args.questions, seed=args.seed)
    print(f"{args.target}: {documents} documents, {queries} queries ({args.split})",
          file=sys.stderr)


if __name__ == "__main__":
    main()
