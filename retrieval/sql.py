"""Raw SQL of retrieval: the vector channel, the lexical channel and their helpers. Every value
is bound as a parameter (the HNSW key's dimensions, a number read from the catalogue, are
written into the statement, as the index's expression must be matched)."""

import functools
import re

from index.vector_index import HnswKey
from parsing.lexical import HEADING_WEIGHT

# Within the caller's knowledge bases only: an empty answer says nothing about the others.
HAS_EMBEDDINGS = """
SELECT EXISTS (SELECT 1 FROM embeddings e JOIN chunks c ON c.id = e.chunk_id
               WHERE e.embedding_provider = %s AND e.embedding_model = %s
                 AND e.embedding_dim = %s AND c.knowledge_base_id = ANY(%s)) AS embedded
"""

# BM25 of the lexical channel (retrieval/lexical.py), on the terms parsing/lexical.py stored in
# chunks.lexical_terms. Bound as parameters with the query; tuned values, not inputs.
BM25_K1 = 1.2  # how fast repeated occurrences of a term stop adding to the score
BM25_B = 0.75  # how much a long chunk is discounted against the average length
LEXICAL_MAX_DF_SHARE = 0.5  # a query term in more chunks than this share of all is dropped
LEXICAL_PHRASE_WEIGHT = 0.5  # bonus per query pair found adjacent: weight × mean idf of the two
# An occurrence in a heading (weight B in the tsvector) counts this many times an occurrence in
# the body: a rule of the index, since the impact cells are made with it (parsing/lexical.py).
LEXICAL_HEADING_WEIGHT = float(HEADING_WEIGHT)

# score(chunk) = Σ over kept query terms t in the chunk of
#                  idf(t) · tf · (k1 + 1) / (tf + k1 · (1 − b + b · dl / avgdl))
#              + Σ over adjacent query pairs (a, b) found adjacent, in that order, in the chunk of
#                  phrase_weight · (idf(a) + idf(b)) / 2
# with idf(t) = ln(1 + (N − df + 0.5) / (df + 0.5)); tf = positions of t in the chunk, those
# in its headings (weight B) counted heading_weight times; dl = the chunk's term count. N, avgdl
# and every df are counted over the chunks of the caller's knowledge bases only: a score never
# depends on, or reveals, another base's text. A term with df > max_df_share · N is dropped: it
# neither selects nor scores (nor counts in matched_share).
#
# Two statements. LEXICAL_STATS reads the statistics of the caller's bases
# (lexical_scope_stats, lexical_length_stats, lexical_term_stats: knowledge's migration 0012) and
# finds the identifier hits below; retrieval/lexical.py then derives each term's idf and the
# bound of each impact cell, and runs LEXICAL_SCORE on the chunks of the cells it chose to read
# (every chunk read is filtered on chunks.knowledge_base_id inside the statement), widening the
# cells until no unread chunk can reach the top.
#
# An identifier term (the caller passes its parts) also matches chunks whose content holds it,
# ignoring case, between two characters that are not ASCII letters or digits, where the text
# makes a longer compound of it (`foo_bar` in `foo_bar.baz()`; never `ERR-1042` in
# `ERR-10420`): chunks holding its parts at one position of the tsvector (`'foo' <0> 'bar'`),
# found through the cells of every part. Such a chunk scores the term as one occurrence
# (tf = 1), counts it in matched_share and toward the term's df. Terms become tsqueries inside
# the statement (lexeme quoted: '' for ', \\ for \), identifiers become regular expressions with
# every character that is not a letter or digit escaped: the query's text is only ever a bound
# value. Every statistic is its own MATERIALIZED CTE: inlined, the planner evaluates them again
# per use and per candidate. The sums run in a fixed order: whatever plan a candidate set gets,
# equal inputs give bit-equal scores, so chunks that tie stay ordered by id.
LEXICAL_STATS = r"""
WITH query_terms AS MATERIALIZED (
  SELECT q.term, q.ord,
         ('''' || replace(replace(q.term, '\', '\\'), '''', '''''') || '''')::tsquery AS tsq,
         (SELECT string_agg('''' || replace(replace(part, '\', '\\'), '''', '''''') || '''',
                            ' <0> ')
          FROM unnest(string_to_array(q.parts, ' ')) AS part)::tsquery AS parts,
         (SELECT string_agg('(' || (SELECT string_agg(
                                      '''' || replace(replace(part || '~' || cell, '\', '\\'),
                                                      '''', '''''') || '''', ' | ')
                                    FROM unnest(%(cells)s::text[]) AS cell) || ')', ' & ')
          FROM unnest(string_to_array(q.parts, ' ')) AS part)::tsquery AS part_cells,
         '(^|[^0-9a-z])' || regexp_replace(q.term, '([^[:alnum:]])', '\\\1', 'g')
         || '($|[^0-9a-z])' AS pattern
  FROM unnest(%(terms)s::text[], %(identifier_parts)s::text[]) WITH ORDINALITY
       AS q(term, parts, ord)
),
substring_hits AS MATERIALIZED (
  SELECT q.term, c.id AS chunk_id
  FROM query_terms q
  JOIN chunks c ON c.lexical_cells @@ q.part_cells
  WHERE q.parts IS NOT NULL AND c.lexical_terms @@ q.parts AND c.content ~* q.pattern
    AND NOT c.lexical_terms @@ q.tsq AND c.knowledge_base_id = ANY(%(kb_ids)s)
),
lengths AS MATERIALIZED (
  SELECT s.length_cell, sum(s.chunk_count)::int8 AS chunks
  FROM lexical_length_stats s
  WHERE s.knowledge_base_id = ANY(%(kb_ids)s)
  GROUP BY s.length_cell
  HAVING sum(s.chunk_count) > 0
)
SELECT
  (SELECT coalesce(sum(s.chunk_count), 0)::int8 FROM lexical_scope_stats s
   WHERE s.knowledge_base_id = ANY(%(kb_ids)s)) AS chunks,
  (SELECT coalesce(sum(s.term_count), 0)::int8 FROM lexical_scope_stats s
   WHERE s.knowledge_base_id = ANY(%(kb_ids)s)) AS length_sum,
  (SELECT array_agg(l.length_cell ORDER BY l.length_cell) FROM lengths l) AS length_cells,
  (SELECT array_agg(l.chunks ORDER BY l.length_cell) FROM lengths l) AS length_counts,
  (SELECT array_agg((SELECT coalesce(sum(s.df), 0)::int8 FROM lexical_term_stats s
                     WHERE s.knowledge_base_id = ANY(%(kb_ids)s) AND s.term = q.term)
                    + (SELECT count(*) FROM substring_hits h WHERE h.term = q.term)
                    ORDER BY q.ord)
   FROM query_terms q) AS dfs,
  (SELECT array_agg(h.term ORDER BY h.chunk_id) FROM substring_hits h) AS hit_terms,
  (SELECT array_agg(h.chunk_id ORDER BY h.chunk_id) FROM substring_hits h) AS hit_chunks
"""

# BM25 (formula above) of the chunks holding one of the impact cells to read
# (%(read_cells)s: `term~t.d` lexemes), or every term of one of the combinations, or an
# identifier hit of a kept term: the best %(limit)s, and how many chunks were scored.
_LEXICAL_SCORE = r"""
WITH term_stats AS MATERIALIZED (
  SELECT t.term, t.idf,
         ('''' || replace(replace(t.term, '\', '\\'), '''', '''''') || '''')::tsquery AS tsq
  FROM unnest(%(terms)s::text[], %(idfs)s::float8[]) AS t(term, idf)
),
-- The chunks to score: those of the cells read (%(read_cells)s: `term~t.d` lexemes), and those
-- holding every term of one of the combinations (the terms of one in %(combination_terms)s
-- sharing its number in %(combination_groups)s; a term's cells found by the prefix `term~`).
-- The combinations' chunks come from the cells of a few anchor terms (%(anchor_terms)s: every
-- combination holds one, retrieval/lexical.py), each expanded once, and are then tested against
-- the combinations one row at a time. Handed to GIN as one OR of every combination, each chunk
-- holding any of their terms was tested against that whole query; as one scan per combination,
-- the cells of a common term were expanded once per combination holding it: either cost 2-5
-- times as much at 40-60 combinations of common terms.
kept AS MATERIALIZED (
  SELECT array_agg(term) AS terms, count(*) AS size,
         (SELECT string_agg('''' || replace(replace(r.lexeme, '\', '\\'), '''', '''''') || '''',
                            ' | ')
          FROM unnest(%(read_cells)s::text[]) AS r(lexeme))::tsquery AS cells,
         (SELECT string_agg('''' || replace(replace(a.term || '~', '\', '\\'), '''', '''''')
                            || ''':*', ' | ')
          FROM unnest(%(anchor_terms)s::text[]) AS a(term))::tsquery AS anchors,
         ARRAY(SELECT string_agg('''' || replace(replace(c.term || '~', '\', '\\'), '''',
                                                 '''''') || ''':*', ' & ')::tsquery
               FROM unnest(%(combination_terms)s::text[], %(combination_groups)s::int[])
                    AS c(term, grp)
               GROUP BY c.grp ORDER BY c.grp) AS sets,
         string_agg(tsq::text, ' | ')::tsquery AS any_term
  FROM term_stats
),
substring_hits AS MATERIALIZED (
  SELECT h.term, h.chunk_id
  FROM unnest(%(hit_terms)s::text[], %(hit_chunks)s::int8[]) AS h(term, chunk_id)
),
-- Each candidate once, with its tsvector cut down to the kept terms, their positions and
-- weights kept (every lexeme but the kept terms deleted): everything after this reads those few
-- lexemes, never the chunk again. The combinations' test reads the row's cells through
-- coalesce(), which the index cannot answer: the planner keeps it a filter on the anchors' rows.
cell_chunks AS MATERIALIZED (
  SELECT c.id, c.lexical_length AS dl, {matched} AS matched
  FROM kept JOIN chunks c ON {match}
  WHERE c.knowledge_base_id = ANY(%(kb_ids)s){documents}
),
set_chunks AS MATERIALIZED (
  SELECT c.id, c.lexical_length AS dl, {matched} AS matched
  FROM kept JOIN chunks c ON c.lexical_cells @@ kept.anchors
  WHERE c.knowledge_base_id = ANY(%(kb_ids)s){documents}
    AND c.id NOT IN (SELECT id FROM cell_chunks)
    AND coalesce(c.lexical_cells, ''::tsvector) @@ ANY(kept.sets)
),
candidates AS MATERIALIZED (
  SELECT id, dl, matched FROM cell_chunks
  UNION ALL
  SELECT id, dl, matched FROM set_chunks
  UNION ALL
  SELECT c.id, c.lexical_length, {matched}
  FROM kept JOIN chunks c ON c.id = ANY(%(hit_chunks)s::int8[])
  WHERE c.knowledge_base_id = ANY(%(kb_ids)s){documents}
    AND c.id NOT IN (SELECT id FROM cell_chunks) AND c.id NOT IN (SELECT id FROM set_chunks)
),
term_hits AS (
  SELECT k.id, k.dl, u.lexeme AS term,
         cardinality(u.positions)
           + (%(heading_weight)s - 1) * cardinality(array_positions(u.weights, 'B')) AS tf
  FROM candidates k CROSS JOIN LATERAL unnest(k.matched) AS u
  UNION ALL
  SELECT k.id, k.dl, h.term, 1 FROM substring_hits h JOIN candidates k ON k.id = h.chunk_id
),
bm25 AS (
  SELECT h.id, count(*) AS matched_terms,
         sum(t.idf * h.tf * (%(k1)s + 1)
             / (h.tf + %(k1)s * (1 - %(b)s + %(b)s * h.dl / %(avgdl)s)) ORDER BY h.term) AS score
  FROM term_hits h
  JOIN term_stats t ON t.term = h.term
  GROUP BY h.id
),
phrase_pairs AS MATERIALIZED (
  SELECT tsquery_phrase(l.tsq, r.tsq) AS phrase,
         %(phrase_weight)s * (l.idf + r.idf) / 2 AS bonus
  FROM unnest(%(pair_left)s::text[], %(pair_right)s::text[]) AS p(left_term, right_term)
  JOIN term_stats l ON l.term = p.left_term
  JOIN term_stats r ON r.term = p.right_term
),
phrase_bonus AS (
  SELECT k.id, sum(p.bonus ORDER BY p.bonus) AS bonus
  FROM candidates k JOIN phrase_pairs p ON k.matched @@ p.phrase
  GROUP BY k.id
),
ranked AS (
  SELECT b.id, b.score + coalesce(p.bonus, 0) AS score,
         b.matched_terms::float8 / kept.size AS matched_share
  FROM bm25 b
  LEFT JOIN phrase_bonus p ON p.id = b.id
  CROSS JOIN kept
  ORDER BY score DESC, b.id
  LIMIT %(limit)s
)
SELECT r.id AS chunk_id, c.content, c.relative_path, c.heading_path, c.chunk_index,
       c.document_id, c.content_hash, c.page_start, c.page_end, b.slug AS knowledge_base,
       r.score, r.matched_share, (SELECT count(*) FROM candidates) AS scored
FROM ranked r
JOIN chunks c ON c.id = r.id
JOIN knowledge_bases b ON b.id = c.knowledge_base_id
ORDER BY r.score DESC, r.id
"""

# A candidate's tsvector cut to the kept terms (every other lexeme deleted).
_MATCHED = "ts_delete(c.lexical_terms, tsvector_to_array(ts_delete(c.lexical_terms, kept.terms)))"
_LEXICAL_SCORE = _LEXICAL_SCORE.replace("{matched}", _MATCHED)

# A filtered search (retrieval/filters.py) scores only the admitted documents' chunks: through
# the impact cells as an unfiltered search does when they are many; when they are few
# (LEXICAL_SCORE_SCOPED), every admitted chunk holding a kept term, found from the documents'
# side (their chunks by document id, each tested against the terms): the cells of a common
# term hold most of the index, nearly all of it outside the filter.
_CELLS = "c.lexical_cells @@ kept.cells"
_DOCUMENT_IDS = "\n    AND c.document_id IN (SELECT unnest(%(document_ids)s::int8[]))"
LEXICAL_SCORE = _LEXICAL_SCORE.replace("{match}", _CELLS).replace("{documents}", "")
LEXICAL_SCORE_FILTERED = _LEXICAL_SCORE.replace("{match}", _CELLS).replace(
    "{documents}", _DOCUMENT_IDS)
LEXICAL_SCORE_SCOPED = _LEXICAL_SCORE.replace(
    "{match}", "c.lexical_terms @@ kept.any_term").replace("{documents}", _DOCUMENT_IDS)

# The search index's candidates (index/search.py): the chunks it proposes and those changed
# since its generation (%(candidate_ids)s), with the identifier hits, scored by the same formula
# in the same snapshot; a candidate deleted or outside the caller's bases is not read at all.
# No term sets: the index, not the impact cells, chose what to score.
_NO_SET_CHUNKS = """set_chunks AS MATERIALIZED (
  SELECT c.id, c.lexical_length AS dl, NULL::tsvector AS matched FROM chunks c WHERE false
),
candidates"""
LEXICAL_SCORE_IDS = re.sub(r"set_chunks AS MATERIALIZED \(.*?\n\),\ncandidates", _NO_SET_CHUNKS,
                           _LEXICAL_SCORE, count=1, flags=re.DOTALL) \
    .replace("{match}", "c.id = ANY(%(candidate_ids)s::int8[])").replace("{documents}", "")

# The lexical search's statements share one snapshot (retrieval/lexical.py).
LEXICAL_SNAPSHOT = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"

# The vector channel (retrieval/vector.py). Exact scan over the current provider/model/dim only;
# the distances are computed on the embeddings table alone and only the top rows are joined to
# their chunks; ties are broken by chunk id, so equal scores always come back in the same order.
# It is the first release's scan with the chunk id (fusion needs it) and the chunk's page span
# added to the output: the same rows, distances and order, which
# tests/retrieval/test_vector_index.py checks row for row against that scan (kept in
# tests/retrieval/first_release.py).
_NEAREST = """
WITH nearest AS (
  SELECT e.chunk_id, e.embedding <=> %b AS distance
  FROM embeddings e
  JOIN chunks k ON k.id = e.chunk_id
  WHERE e.embedding_provider = %s AND e.embedding_model = %s AND e.embedding_dim = %s
    AND k.knowledge_base_id = ANY(%s){documents}
  ORDER BY {order}
  LIMIT %s
)
SELECT n.chunk_id, c.content, c.relative_path, c.heading_path, c.chunk_index, c.document_id,
       c.content_hash, c.page_start, c.page_end, b.slug AS knowledge_base, n.distance
FROM nearest n
JOIN chunks c ON c.id = n.chunk_id
JOIN knowledge_bases b ON b.id = c.knowledge_base_id
ORDER BY n.distance, n.chunk_id
"""
# A filtered search (retrieval/filters.py) binds the admitted documents after the bases. As a
# set to join, not `= ANY(array)`: a prepared statement's generic plan tests `= ANY` by walking
# the array for every row, which at 12,500 admitted documents cost more than the whole search.
_DOCUMENTS = "\n    AND k.document_id IN (SELECT unnest(%s::int8[]))"
SEARCH_EXACT = _NEAREST.format(documents="", order="distance, e.chunk_id")
SEARCH_EXACT_FILTERED = _NEAREST.format(documents=_DOCUMENTS, order="distance, e.chunk_id")
# The exact scan over given chunks only: the search index's candidates (index/search.py).
SEARCH_IDS = _NEAREST.format(documents="\n    AND e.chunk_id = ANY(%s::int8[])",
                             order="distance, e.chunk_id")

# Once an HNSW index exists, the planner may answer SEARCH_EXACT from it (an index scan under
# an incremental sort on the chunk id): approximate. HNSW has no bitmap scan, so turning off
# plain index scans for the exact query's transaction keeps it a scan of every vector; the
# join to chunks then goes through a bitmap scan of chunks_pkey, just as cheap for k rows.
EXACT_SETTINGS = "SET LOCAL enable_indexscan = off"

# For the query's transaction only. strict_order: when the first ef_search candidates do not
# give `limit` visible rows (rows deleted but not yet vacuumed, a limit above ef_search),
# pgvector keeps scanning the graph, still returning rows in exact distance order, instead of
# returning fewer rows. enable_sort off: the planner does not count the cost of reading every
# vector out of line (TOAST), so at 100k vectors it priced the full scan below the index from
# ef_search 100 up and ran a 400 ms scan instead of a 5 ms index search. Every other plan for
# ORDER BY distance LIMIT k needs a Sort node; the index scan needs none.
HNSW_SETTINGS = """
SELECT set_config('hnsw.ef_search', %s, true),
       set_config('hnsw.iterative_scan', 'strict_order', true),
       set_config('enable_sort', 'off', true)
"""

# The caller's knowledge bases filter the rows the index returns (iterative scan goes on past
# ef_search until `limit` allowed rows are found, up to hnsw.max_scan_tuples); when a small base
# in a large index still gets fewer, retrieval/vector.py answers from the exact scan instead.
# Ordered by the index's key (index/vector_index.py HnswKey: the model's own dimensions in
# half precision), the very expression the index is built on, so the planner can answer from
# the index (one partial index per provider/model, whose predicate the planner proves from the
# bound values). The query vector is bound a second time for its key, before the limit. The
# distance reported is the full-precision one, and the rows the index found are ordered by it,
# ties by chunk id: the exact scan's scores for the rows found.
@functools.lru_cache(maxsize=16)
def search_hnsw(key: HnswKey, *, filtered: bool) -> str:
    order = f"{key.of('e.embedding')} <=> {key.of('%b::vector')}"
    return _NEAREST.format(documents=_DOCUMENTS if filtered else "", order=order)


# The cosine distance of given chunks to the query, for chunks only the lexical channel found.
CHUNK_DISTANCES = """
SELECT e.chunk_id, e.embedding <=> %b AS distance
FROM embeddings e
WHERE e.chunk_id = ANY(%s)
  AND e.embedding_provider = %s AND e.embedding_model = %s AND e.embedding_dim = %s
"""

# The documents of the caller's bases a filtered search admits (retrieval/filters.py builds the
# conditions on `d`, every value bound), with the number of their chunks, which decides how the
# vector channel searches them (retrieval/vector.py).
FILTER_DOCUMENTS = """
WITH matched AS MATERIALIZED (
  SELECT d.id FROM documents d
  WHERE d.knowledge_base_id = ANY(%(kb_ids)s)
    AND {conditions}
)
SELECT (SELECT array_agg(m.id ORDER BY m.id) FROM matched m) AS document_ids,
       (SELECT count(*) FROM chunks c WHERE c.document_id IN (SELECT m.id FROM matched m))
         AS chunks
"""
