"""The lexical channel: BM25 over the chunks' stored terms, computed inside PostgreSQL.

The query goes through the same analyzer as the chunks (parsing/lexical.py: stems, stop
words, identifiers whole). The statistics come from the per-base tables the chunk writes keep
(knowledge/migrations/0012_lexical_statistics_triggers.sql); the formula is retrieval/sql.py's.

The top k without scoring every chunk that holds a query term: each chunk stores, per term, the
impact cell of its (term frequency, length) pair, and a cell bounds BM25's weight of the term
in every chunk in it. The cells of all query terms are sorted by that bound (idf times the
weight at the cell's highest frequency and shortest length); the chunks holding the first ones
are scored exactly; once the k-th score is above the best any other chunk could reach (the
sum over terms of their best unread cell, plus the phrase bonuses those terms could still
earn), the ranking is the exhaustive one. Otherwise more cells are read, up to all of them.
Identifiers are also looked for inside longer compounds of the text (retrieval/sql.py); those
chunks are always scored.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
from django.db import connections, transaction
from psycopg.rows import class_row

from core.config import get_config
from core.db import db_errors_translated
from core.errors import InvalidRequest
from core.replicas import read_alias
from index.search import Candidates, lexical_candidates
from knowledge.db_schema import index_connection
from parsing.lexical import DL_CELL_LOWER, TF_CELL_UPPER, cell_lexeme
from retrieval import sql
from retrieval.filters import FilteredScope
from retrieval.lexical_query import LexicalQuery, query_parse
from retrieval.types import ChunkColumns

# Every impact cell (parsing/lexical.py): term-frequency class `t`, length class `d`.
ALL_CELLS = [f"{tf_cell}.{length_cell}" for tf_cell in range(len(TF_CELL_UPPER) + 1)
             for length_cell in range(len(DL_CELL_LOWER))]
# The share of a term's chunks expected in each term-frequency class: only to size the reads
# (how many cells fit a budget), never in a bound.
TF_CELL_PRIOR = (0.6, 0.18, 0.08, 0.05, 0.04, 0.025, 0.015, 0.01)
# Chunks the first run may expect to score: the cells of highest bound that fit, which give the
# k-th score to beat. The next run reads what that score still requires (term sets, or cells
# below it); where that is too much, or the first run found fewer than k chunks, the cells that
# fit READ_GROWTH times the budget, and so on; the last run reads every cell (the exhaustive
# ranking). Each run scores what the ones before it read again: growing by 8, that repeats at
# most a seventh of the final run's work.
FIRST_READ_BUDGET = 1_000.0
READ_GROWTH = 8.0
MAX_RUNS = 8
# A second run expected to score more than this share of what the exhaustive one would scores
# everything instead: the bound would save little.
SECOND_READ_SHARE_MAX = 0.6
# Term sets the second run may intersect; a query that needs more widens the cells instead.
COMBINATIONS_MAX = 64
# A filtered search whose documents hold at most this many chunks scores every one of them
# holding a query term in one statement: cheaper than reading cells whose chunks the filter
# mostly drops, and never a second run.
FILTER_SCORE_ALL_CHUNKS = 20_000
# At most this many times FIRST_READ_BUDGET for a filtered search's first run.
FILTER_BUDGET_GROWTH_MAX = 10.0


@dataclass(frozen=True)
class LexicalHit(ChunkColumns):
    """One chunk found by the lexical channel, ranked by BM25 (score desc, chunk id asc)."""

    score: float  # BM25 plus the phrase bonus; not bounded, comparable within one query only
    rank: int  # 1-based position in this channel's ranking
    matched_share: float  # share of the query's kept terms this chunk holds, 0..1


@dataclass(frozen=True, slots=True)
class _StatsRow:
    """LEXICAL_STATS: the caller's bases' statistics for the query's terms."""

    chunks: int
    length_sum: int
    length_cells: list[int] | None
    length_counts: list[int] | None
    dfs: list[int] | None
    hit_terms: list[str] | None  # identifier hits inside longer compounds: term, chunk
    hit_chunks: list[int] | None


@dataclass(frozen=True)
class _ScoredRow(ChunkColumns):
    """A row of the LEXICAL_SCORE statements: a chunk, its score, and how many were scored."""

    score: float
    matched_share: float
    scored: int


def lexical_search(*, query: str, limit: int, knowledge_base_ids: Sequence[int],
                   exhaustive: bool = False, report: LexicalReport | None = None,
                   scope: FilteredScope | None = None) -> list[LexicalHit]:
    """The `limit` chunks with the best BM25 for `query`; [] when no term of it is usable
    (no terms, or every term too common or absent). The same chunks, scores and order as
    scoring every chunk that holds a query term (`exhaustive`, the reference), found by reading
    the impact cells of highest bound first. `report`, when given, is filled with what the
    search read. With `scope` (a filtered search), only the chunks of its documents, all of
    them scored at once when they are few (FILTER_SCORE_ALL_CHUNKS).

    With the search index on (RAG_SEARCH_INDEX), an unfiltered search scores instead the chunks
    the bases' lexical indexes propose (RAG_SEARCH_INDEX_CANDIDATES each) and those changed
    since their generation, by the same formula in the same snapshot: the same scores, and the
    same top chunks as far as the index ranks them among its candidates (docs/benchmarks.md:
    recall@10 against the exhaustive ranking). Without a usable index, the impact cells."""
    if limit < 1:
        raise InvalidRequest(f"limit must be at least 1, got {limit}", details={"field": "limit"})
    parsed = query_parse(query)
    if not parsed.terms or (scope is not None and not scope.document_ids):
        return []
    kb_ids = list(knowledge_base_ids)
    statement = sql.LEXICAL_SCORE
    if scope is not None and scope.chunks <= FILTER_SCORE_ALL_CHUNKS:
        # Every admitted chunk holding a kept term, at once: one run, never a second.
        statement, exhaustive = sql.LEXICAL_SCORE_SCOPED, True
    elif scope is not None:
        statement = sql.LEXICAL_SCORE_FILTERED
    # This channel's rows are read by name on cursors of their own, in the same snapshot:
    # `cursor` also runs the search index's statements (index/search.py).
    with db_errors_translated(), _snapshot() as cursor, \
            psycopg.Cursor(cursor.connection, row_factory=class_row(_StatsRow)) as reading, \
            psycopg.Cursor(cursor.connection, row_factory=class_row(_ScoredRow)) as scoring:
        reading.execute(sql.LEXICAL_STATS, {
            "terms": parsed.terms, "identifier_parts": parsed.identifier_parts,
            "cells": ALL_CELLS, "kb_ids": kb_ids})
        stats = reading.fetchone()
        assert stats is not None  # an aggregate without GROUP BY returns one row
        plan = _plan(parsed=parsed, chunks=stats.chunks, length_sum=stats.length_sum,
                     length_cells=stats.length_cells or [],
                     length_counts=stats.length_counts or [], dfs=stats.dfs or [])
        if plan is None:
            return []
        kept = set(plan.terms)
        hits = [(term, chunk) for term, chunk in zip(stats.hit_terms or [],
                                                     stats.hit_chunks or [])
                if term in kept]
        params = {"terms": plan.terms, "idfs": plan.idfs,
                  "hit_terms": [term for term, _ in hits], "hit_chunks": [c for _, c in hits],
                  "pair_left": parsed.pair_left, "pair_right": parsed.pair_right,
                  "k1": sql.BM25_K1, "b": sql.BM25_B, "avgdl": plan.avgdl,
                  "phrase_weight": sql.LEXICAL_PHRASE_WEIGHT,
                  "heading_weight": sql.LEXICAL_HEADING_WEIGHT, "limit": limit,
                  "kb_ids": kb_ids,
                  "document_ids": scope.document_ids if scope is not None else None}
        if scope is None and not exhaustive:
            found = lexical_candidates(cursor, config=get_config(), knowledge_base_ids=kb_ids,
                                       terms=plan.terms, limit=limit)
            if report is not None:
                report.index = found.explain()
            if isinstance(found, Candidates):
                scoring.execute(sql.LEXICAL_SCORE_IDS, {
                    **params, "candidate_ids": found.chunk_ids, "read_cells": [],
                    "combination_terms": [], "combination_groups": [], "anchor_terms": []})
                rows = scoring.fetchall()
                if report is not None:
                    report.levels = 1
                    report.scored = report.scored_total = rows[0].scored if rows else 0
                return _hits(rows)
        budget = FIRST_READ_BUDGET
        if scope is not None and scope.chunks:
            # The cells' chunks are mostly outside a filter's documents: read proportionally
            # more of them, so the first run still finds about `limit` admitted chunks.
            budget *= min(stats.chunks / scope.chunks, FILTER_BUDGET_GROWTH_MAX)
        read = plan.read_all() if exhaustive else plan.read_upto(budget)
        combinations_tried = False
        for run in range(1, MAX_RUNS + 1):
            scoring.execute(statement, {
                **params, "read_cells": read.lexemes,
                "combination_terms": [plan.terms[term] for group in read.combinations
                                      for term in group],
                "combination_groups": [number for number, group in enumerate(read.combinations)
                                       for _ in group],
                "anchor_terms": [plan.terms[term] for term in plan.anchors(read.combinations)]})
            rows = scoring.fetchall()
            if report is not None:
                report.levels = run
                report.cells_read = len(read.lexemes)
                report.cells_total = len(plan.cells)
                report.scored = rows[0].scored if rows else 0
                report.scored_total += report.scored
                report.combinations = len(read.combinations)
            # Exact once the k-th score is above every score a chunk outside the cells read
            # could reach (strictly: an unread chunk with an equal score and a smaller id
            # would rank before it). The margin covers rounding between SQL and Python sums.
            if read.complete or (len(rows) == limit and rows[-1].score > _with_margin(
                    read.unread_bound)):
                break
            read, combinations_tried, budget = _next_reading(
                plan=plan, read=read, rows=len(rows), limit=limit,
                threshold=rows[-1].score if rows else 0.0, budget=budget,
                combinations_tried=combinations_tried, last_run=run == MAX_RUNS - 1)
    return _hits(rows)


def _hits(rows: list[_ScoredRow]) -> list[LexicalHit]:
    return [LexicalHit(**row.chunk_columns(), score=row.score, rank=rank,
                       matched_share=row.matched_share)
            for rank, row in enumerate(rows, start=1)]


def _next_reading(*, plan: _Plan, read: _Reading, rows: int, limit: int, threshold: float,
                  budget: float, combinations_tried: bool,
                  last_run: bool) -> tuple[_Reading, bool, float]:
    """What the next run reads, after one whose k-th score did not beat the unread bound:
    with a full top k, the chunks that score still requires (the term sets, or the cells
    below it) unless that was tried at this budget; else the cells of highest bound that fit
    READ_GROWTH times the budget, which finds more of the top k (a first run that found fewer
    than `limit` chunks) or raises the k-th score and lowers the unread bound, so the term sets
    fit afterwards. Every cell on the last run. Returns the reading, whether it is the term
    sets' (or the cells below), and the budget."""
    if last_run:
        return plan.read_all(), True, budget
    if rows == limit and not combinations_tried:
        widened = plan.read_combinations(threshold=threshold, read=read)
        if widened is not None:
            return widened, True, budget
    budget *= READ_GROWTH
    return plan.read_upto(budget), False, budget


@dataclass
class LexicalReport:
    """What one lexical search read: for the explain output and the benchmarks."""

    levels: int = 0  # LEXICAL_SCORE runs (1: the first cells read were enough; MAX_RUNS at most)
    cells_read: int = 0  # impact cells of the query's terms read by the last run
    cells_total: int = 0  # impact cells the query's terms could have
    scored: int = 0  # chunks scored by the last run
    scored_total: int = 0  # chunks scored by all runs together (a chunk once per run)
    combinations: int = 0  # term sets whose chunks the last run also scored
    # The search index's part (index/search.py): {"path": "index", "proposed", "delta", ...}, or
    # {"path": "sql", "reason": ...} when the impact cells were read instead; None: not asked.
    index: dict[str, Any] | None = None


@dataclass(frozen=True)
class _Reading:
    lexemes: list[str]  # the cells to read, `term~t.d`
    indexes: frozenset[int]  # their positions in _Plan.cells
    unread_bound: float  # the best score a chunk in none of them could have
    complete: bool  # every cell of every kept term is read
    # Groups of term indexes (into _Plan.terms): also read every chunk holding all terms of
    # one group.
    combinations: tuple[tuple[int, ...], ...] = ()


@dataclass(frozen=True)
class _Plan:
    """The kept terms of one query with their idf, and every cell they could have, by bound."""

    terms: list[str]
    idfs: list[float]
    dfs: list[int]  # each term's chunks in the caller's bases
    avgdl: float
    cells: list[tuple[float, float, int, str]]  # (bound, estimated chunks, term index, lexeme)
    pair_bonuses: list[tuple[int, int, float]]  # (term index, term index, bonus)

    def anchors(self, combinations: Sequence[tuple[int, ...]]) -> list[int]:
        """Terms (indexes into `terms`) such that every combination holds one, chosen greedily
        by combinations covered per chunk holding the term: the combinations' chunks are read
        from these terms' cells, each expanded once (retrieval/sql.py)."""
        uncovered = [set(group) for group in combinations]
        chosen: list[int] = []
        while uncovered:
            covering: dict[int, int] = {}
            for group in uncovered:
                for term in group:
                    covering[term] = covering.get(term, 0) + 1
            best = max(sorted(covering),
                       key=lambda term: covering[term] / max(self.dfs[term], 1))
            chosen.append(best)
            uncovered = [group for group in uncovered if best not in group]
        return sorted(chosen)

    def read_upto(self, budget: float) -> _Reading:
        """The cells of highest bound whose estimated chunks fit in `budget` (at least one),
        and the bound left for a chunk outside them."""
        taken = 0
        estimated = 0.0
        while taken < len(self.cells) and (taken == 0
                                           or estimated + self.cells[taken][1] <= budget):
            estimated += self.cells[taken][1]
            taken += 1
        return self._reading(set(range(taken)))

    def read_all(self) -> _Reading:
        return self._reading(set(range(len(self.cells))))

    def read_combinations(self, *, threshold: float, read: _Reading) -> _Reading | None:
        """Beyond `read`, every chunk that could still reach `threshold` (a score the top k
        already reach). A chunk outside the cells read scores at most the sum of its terms'
        best unread cells plus the phrase bonuses among them, so it holds all terms of some set
        whose sum reaches the threshold; the minimal such sets become combinations, whose
        chunks are read from the cells of a few anchor terms (`anchors`) and tested against
        the sets. No other chunk can enter the top k.
        With more than COMBINATIONS_MAX sets, the greedy widening of the cells instead."""
        cuts: dict[int, float] = {}
        for index, (bound, _, term, _) in enumerate(self.cells):
            if index not in read.indexes:
                cuts[term] = max(cuts.get(term, 0.0), bound)
        order = sorted(cuts, key=lambda term: -cuts[term])
        limit = threshold / (1 + 1e-6)
        found: list[tuple[int, ...]] = []

        def reach(chosen: tuple[int, ...]) -> float:
            members = set(chosen)
            return sum(cuts[term] for term in chosen) + sum(
                bonus for left, right, bonus in self.pair_bonuses
                if left in members and right in members)

        def extend(chosen: tuple[int, ...], start: int) -> bool:
            """Depth first over the terms by decreasing cut; False once too many are found."""
            for position in range(start, len(order)):
                candidate = (*chosen, order[position])
                if reach(candidate) >= limit:
                    if not any(set(earlier) <= set(candidate) for earlier in found):
                        found.append(candidate)
                        if len(found) > COMBINATIONS_MAX:
                            return False
                    continue
                # Only while the terms after it could still lift this set over the threshold.
                if reach((*candidate, *order[position + 1:])) >= limit \
                        and not extend(candidate, position + 1):
                    return False
            return True

        if not extend((), 0):
            return self.read_below(threshold=threshold, read=read)
        return _Reading(lexemes=read.lexemes, indexes=read.indexes, unread_bound=0.0,
                        complete=False, combinations=tuple(found))

    def read_below(self, *, threshold: float, read: _Reading) -> _Reading | None:
        """Beyond `read`, the cells that bring the bound of a chunk outside them below
        `threshold` (a score the top k already reach), chosen greedily by bound removed per
        chunk expected: MaxScore over cells, where a rare term's cells go first and a common
        term's low cells are never read. None when that would read most of the index anyway."""
        per_term: dict[int, list[int]] = {}  # term -> its cell indexes, best bound first
        for index, (_, _, term, _) in enumerate(self.cells):
            per_term.setdefault(term, []).append(index)
        chosen = set(read.indexes)
        next_cell = {term: sum(1 for index in cells if index in chosen)
                     for term, cells in per_term.items()}

        def cut(term: int) -> float:
            cells = per_term[term]
            return self.cells[cells[next_cell[term]]][0] if next_cell[term] < len(cells) else 0.0

        def bound() -> float:
            return sum(cut(term) for term in per_term) + sum(
                bonus for left, right, bonus in self.pair_bonuses
                if cut(left) > 0 and cut(right) > 0)

        limit = threshold / (1 + 1e-6)
        total = sum(cell[1] for cell in self.cells)
        expected = sum(self.cells[index][1] for index in chosen)
        while bound() >= limit:
            best, best_gain = None, -1.0
            for term, cells in per_term.items():
                position = next_cell[term]
                if position >= len(cells):
                    continue
                after = self.cells[cells[position + 1]][0] if position + 1 < len(cells) else 0.0
                released = sum(bonus for left, right, bonus in self.pair_bonuses
                               if term in (left, right) and position + 1 == len(cells))
                gain = (cut(term) - after + released) / max(self.cells[cells[position]][1], 1e-3)
                if gain > best_gain:
                    best, best_gain = term, gain
            if best is None:
                break
            index = per_term[best][next_cell[best]]
            chosen.add(index)
            expected += self.cells[index][1]
            next_cell[best] += 1
            if expected > SECOND_READ_SHARE_MAX * total:
                return None
        return self._reading(chosen)

    def _reading(self, indexes: set[int]) -> _Reading:
        """Reading the cells at `indexes`: the bound left for a chunk in none of them is the sum
        of each term's best unread cell, plus the phrase bonus of every pair whose terms both
        have one."""
        unread: dict[int, float] = {}
        for index, (bound, _, term, _) in enumerate(self.cells):
            if index not in indexes:
                unread[term] = max(unread.get(term, 0.0), bound)
        left = sum(unread.values()) + sum(
            bonus for first, second, bonus in self.pair_bonuses
            if first in unread and second in unread)
        return _Reading(lexemes=[self.cells[index][3] for index in sorted(indexes)],
                        indexes=frozenset(indexes), unread_bound=left,
                        complete=len(indexes) == len(self.cells))


def _plan(*, parsed: LexicalQuery, chunks: int, length_sum: int, length_cells: list[int],
          length_counts: list[int], dfs: list[int]) -> _Plan | None:
    """Each kept term's idf and the bound of its every cell (None: no term is kept). The cells
    of length classes without chunks in the caller's bases are left out: nothing is in them."""
    kept = [(term, df) for term, df in zip(parsed.terms, dfs)
            if 0 < df <= chunks * sql.LEXICAL_MAX_DF_SHARE]
    if not kept or chunks <= 0:
        return None
    avgdl = length_sum / chunks if length_sum > 0 else 1.0
    k1, b = sql.BM25_K1, sql.BM25_B
    idfs = [math.log(1 + (chunks - df + 0.5) / (df + 0.5)) for _, df in kept]
    cells = []
    for length_cell, length_chunks in zip(length_cells, length_counts):
        shortest = DL_CELL_LOWER[length_cell]
        share = length_chunks / chunks
        for tf_cell, tf_share in enumerate(TF_CELL_PRIOR):
            most = TF_CELL_UPPER[tf_cell] if tf_cell < len(TF_CELL_UPPER) else math.inf
            weight = (k1 + 1) if most == math.inf else \
                most * (k1 + 1) / (most + k1 * (1 - b + b * shortest / avgdl))
            for index, ((term, df), idf) in enumerate(zip(kept, idfs)):
                cells.append((idf * weight, df * share * tf_share, index,
                              cell_lexeme(term=term, cell=f"{tf_cell}.{length_cell}")))
    cells.sort(key=lambda cell: (-cell[0], cell[3]))
    position = {term: index for index, (term, _) in enumerate(kept)}
    pair_bonuses = [(position[left], position[right],
                     sql.LEXICAL_PHRASE_WEIGHT * (idfs[position[left]] + idfs[position[right]]) / 2)
                    for left, right in zip(parsed.pair_left, parsed.pair_right)
                    if left in position and right in position]
    return _Plan(terms=[term for term, _ in kept], idfs=idfs, dfs=[df for _, df in kept],
                 avgdl=avgdl, cells=cells,
                 pair_bonuses=pair_bonuses)


def _with_margin(bound: float) -> float:
    return bound * (1 + 1e-9) + 1e-12


@contextmanager
def _snapshot() -> Iterator[psycopg.Cursor]:
    """A cursor whose statements all see one snapshot of the index (REPEATABLE READ, read
    only, rolled back), so the statistics and cells read by the first statement are those the
    later ones score; inside a caller's transaction, that transaction."""
    conn = index_connection()
    alias = read_alias()  # the primary, or the replica this search reads from
    nested = connections[alias].in_atomic_block
    with transaction.atomic(using=alias), psycopg.Cursor(conn) as cursor:
        if not nested:
            cursor.execute(sql.LEXICAL_SNAPSHOT)
        yield cursor
        transaction.set_rollback(True, using=alias)
