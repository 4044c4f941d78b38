-- Recall of an HNSW index on the deployment's own vectors (index/vector_recall.py): recall@10
-- against the exact scan at each ef_search tried, in the order tried, on a sample of stored
-- vectors used as queries. Keyed by the index's name and tied to its oid: a rebuilt index is a
-- new relation, so a measurement never outlives the graph it measured. Retrieval reads it on
-- every search (a primary-key lookup) to pick the path and the ef_search.
CREATE TABLE IF NOT EXISTS vector_index_tuning (
  index_name TEXT PRIMARY KEY,
  index_oid OID NOT NULL,
  embedding_provider TEXT NOT NULL,
  embedding_model TEXT NOT NULL,
  m INTEGER,
  ef_construction INTEGER,
  ef_searches INTEGER[] NOT NULL,
  recalls DOUBLE PRECISION[] NOT NULL,
  target_recall DOUBLE PRECISION NOT NULL,  -- RAG_HNSW_TARGET_RECALL the ladder climbed to
  sample_size INTEGER NOT NULL,  -- queries measured
  vectors BIGINT NOT NULL,  -- the provider/model's vectors when measured
  seconds DOUBLE PRECISION NOT NULL,
  measured_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  CHECK (cardinality(ef_searches) = cardinality(recalls) AND cardinality(recalls) > 0)
);
