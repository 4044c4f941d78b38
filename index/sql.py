"""Raw SQL of the search index: its state, its change log and what a build reads. Every value
is bound as a parameter."""

from dataclasses import dataclass


# The identity of the index's tables: the cluster's own identifier (a new one at every initdb:
# two servers over time on one host and port are never taken for each other) and the oid of the
# state table (a restore creates it anew; a cluster never hands out an oid twice before
# wrap-around), so no index built from other data is ever taken for this database's. With each
# requested base's generation and the oldest generation its log still holds (a base never
# written: 0 and 1).
@dataclass(frozen=True, slots=True)
class StateRow:
    """A row of STATE: the database's identity and name, and one base's generation."""

    identity: str
    database: str
    knowledge_base_id: int
    generation: int
    log_start: int


STATE = """
SELECT (SELECT system_identifier FROM pg_control_system())::text || '-'
         || 'search_index_state'::regclass::oid::text AS identity,
       current_database() AS database, k.id AS knowledge_base_id,
       coalesce(s.generation, 0) AS generation, coalesce(s.log_start, 1) AS log_start
FROM unnest(%s::int8[]) AS k(id)
LEFT JOIN search_index_state s ON s.knowledge_base_id = k.id
ORDER BY k.id
"""

# Every base that has chunks or a state row: what `rag index status` and a full rebuild cover.
BASES = """
SELECT b.id, b.slug FROM knowledge_bases b ORDER BY b.id
"""

# The chunks logged after each base's index generation (%s: the bases, %s: their generations),
# at most %s of them (one more than a search takes as a delta tells it is too far behind).
DELTA = """
SELECT DISTINCT c.chunk_id
FROM unnest(%s::int8[], %s::int8[]) AS i(kb, generation)
JOIN search_index_changes c ON c.knowledge_base_id = i.kb AND c.generation > i.generation
LIMIT %s
"""

# A chunk's terms as the index takes them: each stored lexeme repeated by its term frequency as
# BM25 counts it in SQL (retrieval/sql.py: an occurrence in a heading, weight B, counts
# %(heading_weight)s times), space-separated; lexemes never hold a space. The heading repeats
# come from the B positions alone (ts_filter): counting each lexeme's B weights instead cost 40%
# more (1.3 s per 100k chunks). NULL: no terms yet.
_TERMS = """
SELECT c.id,
       (SELECT string_agg(repeat(u.lexeme || ' ', cardinality(u.positions)), '')
        FROM unnest(c.lexical_terms) AS u)
       || coalesce((SELECT string_agg(repeat(u.lexeme || ' ',
                                             (%(heading_weight)s - 1) * cardinality(u.positions)),
                                      '')
                    FROM unnest(ts_filter(c.lexical_terms, '{{b}}')) AS u), '')
FROM chunks c
WHERE c.knowledge_base_id = %(kb)s AND c.lexical_terms IS NOT NULL{ids}
ORDER BY c.id
"""
CHUNK_TERMS_ALL = _TERMS.format(ids="")
CHUNK_TERMS_SOME = _TERMS.format(ids=" AND c.id = ANY(%(ids)s::int8[])")

# A base's vectors of one provider/model/dim, in chunk id order, each as pgvector's binary form
# of its sparse self (sparsevec_send: dim, nnz, 0, then nnz int32 indices and nnz float32
# values, big-endian): about 105 entries instead of 1,024 floats, parsed by numpy
# (index/sparse_vectors.py) rather than one Python object per vector.
BASE_VECTORS = """
SELECT e.chunk_id, sparsevec_send(e.embedding::sparsevec)
FROM embeddings e JOIN chunks c ON c.id = e.chunk_id
WHERE c.knowledge_base_id = %s AND e.embedding_provider = %s AND e.embedding_model = %s
  AND e.embedding_dim = %s
ORDER BY e.chunk_id
"""

# Whether a base holds any chunk: a base without one needs no index.
BASE_HAS_CHUNKS = "SELECT EXISTS (SELECT 1 FROM chunks c WHERE c.knowledge_base_id = %s)"

# A base's chunk and document counts, for `rag index status`.
BASE_COUNTS = """
SELECT (SELECT count(*) FROM documents d WHERE d.knowledge_base_id = %s),
       (SELECT count(*) FROM chunks c WHERE c.knowledge_base_id = %s)
"""

# Drop what every index of the base has read (a rebuilt or caught-up index on the primary) and
# is older than the grace period, so an index on a replica that lags a little can still catch
# up; the log then starts after the last generation dropped.
PRUNE = """
WITH dropped AS (
  DELETE FROM search_index_changes
  WHERE knowledge_base_id = %s AND generation <= %s AND logged_at < now() - %s * interval '1 second'
  RETURNING generation
)
UPDATE search_index_state s SET log_start = greatest(s.log_start, d.last + 1)
FROM (SELECT max(generation) AS last FROM dropped) d
WHERE s.knowledge_base_id = %s AND d.last IS NOT NULL
"""

SNAPSHOT = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"
