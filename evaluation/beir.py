"""`rag eval --beir PATH`: retrieval scored on a BEIR-format collection with human judgments.

A BEIR folder holds `corpus.jsonl` ({"_id", "title", "text"} per line), `queries.jsonl`
({"_id", "text"}) and `qrels/<split>.tsv` (query-id, corpus-id, score; a header line). Each
document becomes one file of a folder (Markdown with the title as its heading, or plain text when
it has none) that is ingested into a knowledge base like any vault: a throw-away one, removed
afterwards, or one the caller names and keeps (a second run then skips the unchanged files and
re-embeds nothing). Every judged query of the split is then searched in each row's
configuration, and the ranked chunks are turned into a ranking of documents (a document counts
at its best chunk).

Scores per row: nDCG@10 (graded gains as in trec_eval: the judgment's score, log2 discount),
recall@10 and recall@100, MRR@10 and hit@1, with the latency p50/p95 of the row's whole search
(query embedding included) on the first LATENCY_QUERIES queries. Recall@100 needs a deeper list
than /search returns: each row also ranks each query 100 deep (RAG_CANDIDATES 100) for it, so
every other score is exactly the configured search.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
import shutil
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from access.callers import Scope
from core.config import Config
from core.errors import InvalidRequest, NotFound
from embeddings import EmbeddingProvider, get_embedder
from evaluation.beir_reference import ReferenceUnavailable, reference_rankings
from evaluation.fitting import ndcg_at_10
from knowledge.bases import kb_create, kb_delete, kb_get
from knowledge.ingest import IngestRequest, IngestResult, vault_ingest
from knowledge.vault_index import vault_forget
from retrieval.pipeline import channels_fetch, pipeline_clock, pipeline_run
from retrieval.rerank import reranker_status
from retrieval.types import RetrievalRequest

NDCG_DEPTH = 10
RECALL_DEPTH = 100
# Bounds on what a collection may make this command do: documents written and ingested, queries
# searched (each in every row), the size of one JSON line.
MAX_DOCUMENTS = 1_000_000
MAX_QUERIES = 20_000
MAX_LINE_BYTES = 4 * 1024 * 1024
# Each row's own whole search (query embedding included) is timed on this many queries.
LATENCY_QUERIES = 50
_SAFE_NAME = re.compile(r"[^A-Za-z0-9_-]+")
BEIR_FOLDER = Path(".local") / "beir"

Progress = Callable[[str], None]


@dataclass(frozen=True)
class BeirCollection:
    """One split of a BEIR collection: documents, the judged queries and their judgments."""

    name: str
    split: str
    documents: dict[str, tuple[str, str]]  # id -> (title, text)
    queries: dict[str, str]  # id -> text, judged queries of the split only
    qrels: dict[str, dict[str, int]]  # query id -> document id -> grade (> 0 only)
    skipped_judgments: int = 0  # judgments naming a document or query the collection lacks


@dataclass(frozen=True)
class Row:
    """One configuration to score: a retrieval mode, a fusion and a reranker."""

    name: str
    mode: str
    fusion: str
    rerank: str


@dataclass
class RowScores:
    ndcg: list[float] = field(default_factory=list)
    recall_10: list[float] = field(default_factory=list)
    recall_100: list[float] = field(default_factory=list)
    mrr: list[float] = field(default_factory=list)
    hit_1: list[float] = field(default_factory=list)
    latency_ms: list[float] = field(default_factory=list)

    def add(self, ranking: list[str], deep: list[str], judged: dict[str, int]) -> None:
        scores = ranking_scores(ranking=ranking, judged=judged)
        self.ndcg.append(scores["ndcg_at_10"])
        self.recall_10.append(scores["recall_at_10"])
        self.mrr.append(scores["mrr_at_10"])
        self.hit_1.append(scores["hit_at_1"])
        self.recall_100.append(ranking_scores(ranking=deep, judged=judged)["recall_at_100"])

    def summary(self) -> dict[str, Any]:
        def mean(values: list[float]) -> float | None:
            return round(sum(values) / len(values), 4) if values else None

        latencies = sorted(self.latency_ms)
        return {"ndcg_at_10": mean(self.ndcg), "recall_at_10": mean(self.recall_10),
                "recall_at_100": mean(self.recall_100), "mrr_at_10": mean(self.mrr),
                "hit_at_1": mean(self.hit_1),
                "latency_p50_ms": (round(statistics.median(latencies), 1)
                                   if latencies else None),
                "latency_p95_ms": (round(latencies[min(len(latencies) - 1,
                                                       math.ceil(0.95 * len(latencies)) - 1)], 1)
                                   if latencies else None)}


def ranking_scores(*, ranking: list[str], judged: dict[str, int]) -> dict[str, float]:
    """nDCG@10, recall@10, recall@100, MRR@10 and hit@1 of a ranking of document ids against
    graded judgments (grade > 0 is relevant); a document counts once, at its first rank."""
    ranking = list(dict.fromkeys(ranking))
    relevant = {doc: grade for doc, grade in judged.items() if grade > 0}
    first = next((position for position, doc in enumerate(ranking[:NDCG_DEPTH], start=1)
                  if doc in relevant), None)
    total = len(relevant)
    return {"ndcg_at_10": ndcg_at_10(ranking=ranking, judged=relevant),
            "recall_at_10": (sum(doc in relevant for doc in ranking[:10]) / total
                             if total else 0.0),
            "recall_at_100": (sum(doc in relevant for doc in ranking[:RECALL_DEPTH]) / total
                              if total else 0.0),
            "mrr_at_10": 1 / first if first else 0.0,
            "hit_at_1": 1.0 if ranking and ranking[0] in relevant else 0.0}


def beir_load(*, path: Path, split: str, max_queries: int | None = None) -> BeirCollection:
    """Read a BEIR folder's corpus, the queries judged in `split` and their judgments."""
    corpus_file, queries_file = path / "corpus.jsonl", path / "queries.jsonl"
    qrels_file = path / "qrels" / f"{split}.tsv"
    for needed in (corpus_file, queries_file, qrels_file):
        if not needed.is_file():
            splits = sorted(p.stem for p in (path / "qrels").glob("*.tsv"))
            raise InvalidRequest(
                f"not a BEIR folder for split {split!r}: {needed} is missing"
                + (f" (splits here: {', '.join(splits)})" if splits else ""),
                details={"path": str(path), "missing": needed.name})
    documents: dict[str, tuple[str, str]] = {}
    for number, record in _jsonl(corpus_file):
        if len(documents) >= MAX_DOCUMENTS:
            raise InvalidRequest(f"{corpus_file} has more than {MAX_DOCUMENTS} documents")
        doc_id = _field(record, "_id", corpus_file, number)
        documents[doc_id] = (str(record.get("title") or ""), str(record.get("text") or ""))
    qrels: dict[str, dict[str, int]] = {}
    skipped = 0
    for number, raw in _lines(qrels_file):
        if not raw.strip():
            continue
        cells = raw.decode("utf-8", errors="replace").rstrip("\r\n").split("\t")
        if number == 1 and not _is_int(cells[-1]):
            continue  # the header
        if len(cells) < 3 or not _is_int(cells[-1]):
            raise InvalidRequest(f"{qrels_file}:{number}: expected query-id, corpus-id and "
                                 "an integer score separated by tabs")
        query_id, doc_id, grade = cells[0], cells[1], int(cells[-1])
        if doc_id not in documents:
            skipped += 1
            continue
        if grade > 0:
            qrels.setdefault(query_id, {})[doc_id] = grade
    queries: dict[str, str] = {}
    for number, record in _jsonl(queries_file):
        query_id = _field(record, "_id", queries_file, number)
        if query_id in qrels:
            queries[query_id] = str(record.get("text") or "")
    skipped += sum(len(judged) for query_id, judged in qrels.items() if query_id not in queries)
    qrels = {query_id: judged for query_id, judged in qrels.items()
             if query_id in queries and queries[query_id].strip()}
    chosen = sorted(qrels)
    limit = min(max_queries or MAX_QUERIES, MAX_QUERIES)
    if len(chosen) > limit:
        if max_queries is None:
            raise InvalidRequest(f"{qrels_file} judges {len(chosen)} queries, more than "
                                 f"{MAX_QUERIES}; pass --max-queries to score a sample")
        chosen = chosen[:limit]
    if not chosen:
        raise InvalidRequest(f"{qrels_file} judges no query of {queries_file} with a relevant "
                             "document of the corpus")
    return BeirCollection(name=path.resolve().name, split=split, documents=documents,
                          queries={query_id: queries[query_id] for query_id in chosen},
                          qrels={query_id: qrels[query_id] for query_id in chosen},
                          skipped_judgments=skipped)


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """The file's lines with their numbers; one longer than MAX_LINE_BYTES is refused without
    being read whole (readline with a limit)."""
    with path.open("rb") as lines:
        number = 0
        while raw := lines.readline(MAX_LINE_BYTES + 1):
            number += 1
            if len(raw) > MAX_LINE_BYTES:
                raise InvalidRequest(f"{path}:{number}: a line over {MAX_LINE_BYTES} bytes")
            yield number, raw


def _jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, raw in _lines(path):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as error:
            raise InvalidRequest(f"{path}:{number}: not a JSON object ({error})") from None
        if not isinstance(record, dict):
            raise InvalidRequest(f"{path}:{number}: not a JSON object")
        yield number, record


def _field(record: dict[str, Any], name: str, path: Path, number: int) -> str:
    value = record.get(name)
    if value is None or str(value) == "":
        raise InvalidRequest(f"{path}:{number}: no {name!r}")
    return str(value)


def _is_int(text: str) -> bool:
    return bool(re.fullmatch(r"-?\d+", text.strip()))


def document_file_name(doc_id: str, *, titled: bool) -> str:
    """A file name for a document id: its safe characters, plus a hash when any were not."""
    safe = _SAFE_NAME.sub("_", doc_id)[:80]
    if safe != doc_id:
        safe += "-" + hashlib.sha256(doc_id.encode("utf-8")).hexdigest()[:10]
    return safe + (".md" if titled else ".txt")


def beir_write(*, collection: BeirCollection, folder: Path) -> dict[str, str]:
    """Write each document as one file of `folder` (unchanged files are left alone, so their
    mtime and hash keep a second ingest cheap); returns relative path -> document id."""
    folder.mkdir(parents=True, exist_ok=True)
    paths: dict[str, str] = {}
    for doc_id, (title, text) in collection.documents.items():
        title = " ".join(title.split())
        name = document_file_name(doc_id, titled=bool(title))
        # A line of the text that Markdown would read as a heading or a front matter fence
        # stays text.
        body = text if not title else re.sub(r"(?m)^(\s*)(#|---)", r"\1\\\2", text)
        content = f"# {title}\n\n{body}\n" if title else f"{text}\n"
        target = folder / name
        if not target.is_file() or target.read_text(encoding="utf-8") != content:
            target.write_text(content, encoding="utf-8")
        paths[name] = doc_id
    return paths


def beir_rows(*, config: Config) -> list[Row]:
    """The rows of the report: each channel, the fused channels, the configured pipeline and
    the ablation (the other fusion, each reranker that can run here)."""
    rows = [Row("lexical", "lexical", config.rag_fusion, "none"),
            Row("vector", "vector", config.rag_fusion, "none"),
            Row("hybrid", "hybrid", config.rag_fusion, "none"),
            Row("default", config.rag_retrieval, config.rag_fusion, config.rag_rerank)]
    other = "rrf" if config.rag_fusion == "convex" else "convex"
    rows.append(Row(f"hybrid {other}", "hybrid", other, "none"))
    for provider in ("features", "cross-encoder", "openai-compatible"):
        if reranker_status(config=dataclasses.replace(config, rag_rerank=provider)) == "ok":
            rows.append(Row(f"hybrid + {provider}", "hybrid", config.rag_fusion, provider))
    return rows


def beir_evaluate(*, path: Path, split: str, config: Config, knowledge_base: str | None = None,
                  max_queries: int | None = None, reference: bool = True,
                  progress: Progress | None = None) -> dict[str, Any]:
    """The report of `rag eval --beir PATH --json`."""
    say = progress or (lambda message: None)
    collection = beir_load(path=path, split=split, max_queries=max_queries)
    say(f"{collection.name}: {len(collection.documents)} documents, {len(collection.queries)} "
        f"judged queries ({split})")
    throwaway = knowledge_base is None
    slug = knowledge_base or f"beir-{_SAFE_NAME.sub('-', collection.name.lower())[:30]}-" \
        f"{hashlib.sha256(str(time.time_ns()).encode()).hexdigest()[:8]}"
    folder = beir_folder(config=config, slug=slug)
    try:
        started = time.perf_counter()
        base, paths, ingested = beir_index(collection=collection, config=config, slug=slug)
        ingest_seconds = time.perf_counter() - started
        say(f"ingested into {slug}: {ingested.chunks_written} chunks written, "
            f"{ingested.documents_skipped} documents unchanged, {ingest_seconds:.1f}s")
        embedder = get_embedder(config=config)
        plan = beir_rows(config=config)
        say(f"scoring {len(plan)} rows: {', '.join(row.name for row in plan)}")
        rows = [{"row": row.name, "retrieval": row.mode, "fusion": row.fusion,
                 "rerank": row.rerank, **scores.summary()}
                for row, scores in zip(plan, _rows_scores(
                    rows=plan, collection=collection, paths=paths, config=config,
                    embedder=embedder, knowledge_base_ids=[base]), strict=True)]
        if reference:
            rows.append(_reference_row(collection=collection))
    finally:
        if throwaway:
            _base_remove(slug=slug, folder=folder)
    return {"collection": collection.name, "split": split, "path": str(path),
            "documents": len(collection.documents), "queries": len(collection.queries),
            "skipped_judgments": collection.skipped_judgments,
            "knowledge_base": None if throwaway else slug,
            "embedding_provider": config.embedding_provider,
            "embedding_model": config.embedding_model,
            "chunks_written": ingested.chunks_written, "ingest_seconds": round(ingest_seconds, 1),
            "rows": rows}


def beir_folder(*, config: Config, slug: str) -> Path:
    """Where the documents of the BEIR base `slug` are written."""
    return (config.project_root or Path.cwd()) / BEIR_FOLDER / slug


def beir_index(*, collection: BeirCollection, config: Config,
               slug: str) -> tuple[int, dict[str, str], IngestResult]:
    """Ingest the collection's documents into the BEIR base `slug` (made when new): its id,
    relative path -> document id, and the ingest's result."""
    folder = beir_folder(config=config, slug=slug)
    base = _base_ensure(slug=slug, folder=folder)
    paths = beir_write(collection=collection, folder=folder)
    return base, paths, vault_ingest(IngestRequest(vault_path=folder, knowledge_base=slug,
                                                   prune=True), config=config)


def _base_ensure(*, slug: str, folder: Path) -> int:
    try:
        base = kb_get(slug)
    except NotFound:
        folder.mkdir(parents=True, exist_ok=True)
        return kb_create(slug=slug, name=f"BEIR {slug}", sources=[str(folder)]).id
    if not any(Path(source.path) == folder.resolve() for source in base.sources):
        raise InvalidRequest(f"knowledge base {slug!r} exists and is not a BEIR base of this "
                             f"project (its sources do not include {folder})",
                             details={"knowledge_base": slug})
    return base.id


def _base_remove(*, slug: str, folder: Path) -> None:
    if folder.exists():
        vault_forget(vault_path=folder)
    kb_delete(slug=slug)
    shutil.rmtree(folder, ignore_errors=True)


def _rows_scores(*, rows: list[Row], collection: BeirCollection, paths: dict[str, str],
                 config: Config, embedder: EmbeddingProvider,
                 knowledge_base_ids: list[int]) -> list[RowScores]:
    """Every row's scores. Per query both channels are fetched once, RECALL_DEPTH deep, and
    every row ranks from them (the same hits it would fetch itself: pipeline.ChannelHits);
    each row's latency is its own whole search, timed on the first LATENCY_QUERIES queries.
    Rows of one configuration (the default is often the plain hybrid) are scored once."""
    distinct = list(dict.fromkeys((row.mode, row.fusion, row.rerank) for row in rows))
    variants = [dataclasses.replace(config, rag_retrieval=mode, rag_fusion=fusion,
                                    rag_rerank=rerank) for mode, fusion, rerank in distinct]
    width = max(config.rag_candidates, RECALL_DEPTH)
    scored = [RowScores() for _ in distinct]
    scope = Scope.of(knowledge_base_ids)
    for number, (query_id, text) in enumerate(collection.queries.items()):
        vector = embedder.embed_query(text)
        channels = channels_fetch(query=text, vector=vector, width=width, config=config,
                                  embedder=embedder, knowledge_base_ids=knowledge_base_ids)
        for variant, row_scores in zip(variants, scored, strict=True):
            request = RetrievalRequest(query=text, scope=scope, top_k=NDCG_DEPTH,
                                       mode=variant.rag_retrieval)
            if number < LATENCY_QUERIES:
                started = time.perf_counter()
                pipeline_run(request, vector=embedder.embed_query(text), config=variant,
                             embedder=embedder, clock=pipeline_clock())
                row_scores.latency_ms.append((time.perf_counter() - started) * 1000)
            run = pipeline_run(request, vector=vector, config=variant, embedder=embedder,
                               channels=channels)
            deeper = pipeline_run(dataclasses.replace(request, top_k=RECALL_DEPTH),
                                  vector=vector,
                                  config=dataclasses.replace(variant, rag_candidates=width),
                                  embedder=embedder, channels=channels)
            row_scores.add([paths.get(item.hit.relative_path, "") for item in run.results],
                           [paths.get(item.hit.relative_path, "") for item in deeper.results],
                           collection.qrels[query_id])
    by_configuration = dict(zip(distinct, scored, strict=True))
    return [by_configuration[(row.mode, row.fusion, row.rerank)] for row in rows]


def _reference_row(*, collection: BeirCollection) -> dict[str, Any]:
    scores = RowScores()
    try:
        rankings, latency = reference_rankings(documents=collection.documents,
                                               queries=collection.queries, depth=RECALL_DEPTH)
    except ReferenceUnavailable as missing:
        return {"row": "reference bm25", "retrieval": "reference", "fusion": None,
                "rerank": None, "unavailable": str(missing)}
    for query_id, ranking in rankings.items():
        scores.add(ranking, ranking, collection.qrels[query_id])
    scores.latency_ms = latency
    return {"row": "reference bm25", "retrieval": "reference", "fusion": None,
            "rerank": None, **scores.summary()}
