"""The vector part of a base's index for `fake-lexical-v1`: its vectors as a sparse matrix, by
bucket, scored exactly for the chunks that share a bucket with the query.

The fake vectors are hashed bags of words (embeddings/fake.py): about 105 non-zero
buckets of 1024 per chunk, 2–21 per query. A chunk sharing no bucket with the query has a dot
product of exactly 0, so cosine distance exactly 1: only the chunks in the query's buckets can
rank before those, and those are all scored here. HNSW cannot do this (recall 0.956 at
pgvector's largest ef_search on these vectors); a scan of every vector reads 4 KB per chunk.

On disk, one folder of .npy arrays read through mmap, so every process on the machine shares
the pages: `chunk_ids` (int64, ascending: a row's position is its rank among equal scores),
`norms` (float32, a row's Euclidean norm; 0 for an all-zero vector, which has no direction and
which search() leaves out), and the matrix by column (`indptr` int64 over 1025 buckets, `rows`
int32, `values` float32).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.config import EMBEDDING_DIM

_ARRAYS = ("chunk_ids", "norms", "indptr", "rows", "values")


@dataclass(frozen=True)
class SparseVectors:
    chunk_ids: np.ndarray
    norms: np.ndarray
    indptr: np.ndarray
    rows: np.ndarray
    values: np.ndarray

    @property
    def size(self) -> int:
        return int(self.chunk_ids.shape[0])


@dataclass(frozen=True)
class SparseRows:
    """Consecutive rows: each row's non-zero entries, row after row."""

    chunk_ids: np.ndarray  # int64
    lengths: np.ndarray  # int64: each row's number of entries
    columns: np.ndarray  # int16: the entries' buckets
    values: np.ndarray  # float32


def sparse_rows(chunk_ids: list[int], encoded: list[bytes]) -> SparseRows:
    """A batch of vectors in pgvector's binary sparsevec form (index/sql.py BASE_VECTORS)."""
    lengths = np.fromiter((int.from_bytes(value[4:8], "big") for value in encoded),
                          dtype=np.int64, count=len(encoded))
    columns = [np.frombuffer(value, dtype=">i4", count=nnz, offset=12)
               for value, nnz in zip(encoded, lengths)]
    values = [np.frombuffer(value, dtype=">f4", count=nnz, offset=12 + 4 * nnz)
              for value, nnz in zip(encoded, lengths)]
    return SparseRows(chunk_ids=np.asarray(chunk_ids, dtype=np.int64), lengths=lengths,
                      columns=np.concatenate(columns).astype(np.int16) if columns else
                      np.zeros(0, np.int16),
                      values=np.concatenate(values).astype(np.float32) if values else
                      np.zeros(0, np.float32))


def vectors_write(folder: Path, batches: Iterable[SparseRows]) -> int:
    """Write the matrix of the batches' rows (in chunk id order) into the new folder `folder`;
    returns the number of rows. Memory: the non-zero entries only."""
    ids: list[np.ndarray] = []
    norms: list[np.ndarray] = []
    row_parts: list[np.ndarray] = []
    column_parts: list[np.ndarray] = []
    value_parts: list[np.ndarray] = []
    offset = 0
    for batch in batches:
        count = batch.chunk_ids.shape[0]
        if not count:
            continue
        rows = np.repeat(np.arange(count, dtype=np.int64), batch.lengths)
        squares = np.bincount(rows, weights=batch.values.astype(np.float64) ** 2,
                              minlength=count)
        ids.append(batch.chunk_ids)
        norms.append(np.sqrt(squares).astype(np.float32))
        row_parts.append((rows + offset).astype(np.int32))
        column_parts.append(batch.columns)
        value_parts.append(batch.values)
        offset += count
    all_ids = np.concatenate(ids) if ids else np.zeros(0, np.int64)
    rows = np.concatenate(row_parts) if row_parts else np.zeros(0, np.int32)
    columns = np.concatenate(column_parts) if column_parts else np.zeros(0, np.int16)
    values = np.concatenate(value_parts) if value_parts else np.zeros(0, np.float32)
    order = np.argsort(columns, kind="stable")  # by bucket, rows ascending within one
    counts = np.bincount(columns, minlength=EMBEDDING_DIM)
    arrays: dict[str, np.ndarray] = {
        "chunk_ids": all_ids,
        "norms": np.concatenate(norms) if norms else np.zeros(0, np.float32),
        "indptr": np.concatenate(([0], np.cumsum(counts))).astype(np.int64),
        "rows": rows[order], "values": values[order]}
    folder.mkdir(parents=True, exist_ok=False)
    for name, array in arrays.items():
        np.save(folder / f"{name}.npy", array)
    return int(all_ids.shape[0])


def vectors_open(folder: Path) -> SparseVectors:
    """The matrix in `folder`, mapped read-only (ValueError or OSError when damaged)."""
    arrays = {name: np.load(folder / f"{name}.npy", mmap_mode="r") for name in _ARRAYS}
    matrix = SparseVectors(**arrays)
    if (matrix.indptr.shape[0] != EMBEDDING_DIM + 1 or matrix.norms.shape != matrix.chunk_ids.shape
            or matrix.rows.shape != matrix.values.shape
            or int(matrix.indptr[-1]) != matrix.rows.shape[0]):
        raise ValueError(f"the sparse vectors in {folder} do not fit together")
    return matrix


def nearest(matrix: SparseVectors, *, query: np.ndarray, limit: int,
            exclude: set[int]) -> list[int]:
    """The chunk ids of the `limit` rows nearest to `query` by cosine (ties by chunk id), those
    in `exclude` left out, and every row whose score is within rounding of the last one kept:
    the caller scores them exactly (float32 sums here, PostgreSQL's own order there). Rows that
    share no bucket with the query (cosine 0) come after, in chunk id order; all-zero rows
    never."""
    query = np.asarray(query, dtype=np.float32)
    query_norm = float(np.linalg.norm(query))
    if matrix.size == 0 or query_norm == 0.0 or limit < 1:
        return []
    buckets = np.flatnonzero(query)
    scores = np.zeros(matrix.size, dtype=np.float32)
    for bucket in buckets:
        start, end = int(matrix.indptr[bucket]), int(matrix.indptr[bucket + 1])
        if start == end:
            continue
        rows = matrix.rows[start:end]
        scores[rows] += matrix.values[start:end] * query[bucket]
    with np.errstate(divide="ignore", invalid="ignore"):
        cosines = np.where(matrix.norms > 0, scores / (matrix.norms * query_norm), -np.inf)
    if exclude:
        mask = np.isin(matrix.chunk_ids, np.fromiter(exclude, dtype=np.int64))
        cosines[mask] = -np.inf
    positive = np.flatnonzero(cosines > 0)
    if positive.shape[0] > limit:
        kth = np.partition(cosines[positive], positive.shape[0] - limit)[
            positive.shape[0] - limit]
        chosen = positive[cosines[positive] >= kth - 1e-5]
    else:
        chosen = positive
    order = chosen[np.lexsort((chosen, -cosines[chosen]))]
    found = [int(value) for value in matrix.chunk_ids[order]]
    if len(found) < limit:
        # Cosine exactly 0: the rows in chunk id order, after every positive one.
        zero = np.flatnonzero(cosines == 0)[:limit - len(found)]
        found.extend(int(value) for value in matrix.chunk_ids[zero])
    if len(found) < limit:
        # Negative cosines (not in fake-lexical-v1, whose buckets are counts) come last.
        negative = np.flatnonzero((cosines < 0) & np.isfinite(cosines))
        negative = negative[np.lexsort((negative, -cosines[negative]))]
        found.extend(int(value) for value in matrix.chunk_ids[negative[:limit - len(found)]])
    return found
