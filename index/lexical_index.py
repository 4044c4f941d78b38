"""The lexical part of a base's index: a tantivy index of its chunks' terms, which proposes the
chunks a query's BM25 is likely to rank first (retrieval/lexical.py scores them in SQL).

A chunk is indexed pre-tokenized with the project's own analyzer: its stored lexemes
(parsing/lexical.py: stems, whole identifiers and their parts, CJK bigrams, the file name and
headings), each repeated as often as BM25 counts it in SQL (an occurrence in a heading or the
file name counts LEXICAL_HEADING_WEIGHT times), joined by spaces and split again by tantivy's
whitespace tokenizer, which keeps every lexeme as one term. So tantivy scores the same terms
with the same term frequencies, k1 and b as the SQL formula; what differs (its length norms are
quantised, it counts the heading's repeats in the length, it knows no phrase bonus and no
per-scope statistics) only moves chunks near the cut-off, which the candidates' margin covers.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import tantivy

CHUNK_ID = "chunk_id"
TERMS = "terms"
# tantivy splits its heap between its threads, at least 15 MB each.
WRITER_HEAP_BYTES = 128_000_000


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_unsigned_field(CHUNK_ID, stored=False, indexed=True, fast=True)
    builder.add_text_field(TERMS, stored=False, tokenizer_name="whitespace",
                           index_option="freq")
    return builder.build()


SCHEMA = _schema()


def index_create(folder: Path) -> tantivy.Index:
    """A new, empty index in `folder` (created)."""
    folder.mkdir(parents=True, exist_ok=False)
    return tantivy.Index(SCHEMA, path=str(folder), reuse=False)


def index_open(folder: Path) -> tantivy.Index:
    """The index in `folder`, read as of its last commit until `reload()` (manual reload: a
    reader moves on only when the manifest says the index moved on)."""
    index = tantivy.Index.open(str(folder))
    index.config_reader(reload_policy="manual")
    return index


def documents_add(writer: tantivy.IndexWriter, rows: Iterable[tuple[int, str | None]]) -> int:
    """Add (chunk id, space-separated terms) rows; a chunk without terms is left out. Returns
    how many were added."""
    added = 0
    for chunk_id, terms in rows:
        if not terms:
            continue
        document = tantivy.Document()
        document.add_unsigned(CHUNK_ID, chunk_id)
        document.add_text(TERMS, terms)
        writer.add_document(document)
        added += 1
    return added


def documents_delete(writer: tantivy.IndexWriter, chunk_ids: Sequence[int]) -> None:
    """Delete the documents of `chunk_ids` (before they are added again, in the same commit:
    tantivy applies a delete to the documents added before it only). By a term query: a delete
    by term on an unsigned field deletes nothing."""
    for start in range(0, len(chunk_ids), 10_000):
        writer.delete_documents_by_query(
            tantivy.Query.term_set_query(SCHEMA, CHUNK_ID, list(chunk_ids[start:start + 10_000])))


def writer_open(index: tantivy.Index) -> tantivy.IndexWriter:
    return index.writer(heap_size=WRITER_HEAP_BYTES, num_threads=1)


def top_chunks(index: tantivy.Index, *, terms: Sequence[str], limit: int) -> list[int]:
    """The ids of the `limit` chunks with the best tantivy BM25 for any of `terms`, best first."""
    if not terms or limit < 1:
        return []
    query = tantivy.Query.boolean_query([
        (tantivy.Occur.Should, tantivy.Query.term_query(SCHEMA, TERMS, term)) for term in terms])
    searcher = index.searcher()
    hits = searcher.search(query, limit, count=False).hits
    if not hits:
        return []
    values = searcher.fast_field_values(CHUNK_ID, [address for _, address in hits])
    return [int(value) for value in values if value is not None]


def documents_count(index: tantivy.Index) -> int:
    return int(index.searcher().num_docs)
