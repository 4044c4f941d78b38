-- Metadata filters of a search (retrieval/filters.py): resolved on documents to the admitted
-- document ids before the channels run, so each index here keeps that step a few milliseconds
-- at 100k chunks.
--   tags  the document's tags, lowercased (the chunks keep them as written); NULL only for a
--         document stored before this column, filled below from its first chunk
ALTER TABLE documents ADD COLUMN IF NOT EXISTS tags TEXT[];
UPDATE documents d
SET tags = coalesce((SELECT array_agg(DISTINCT lower(t)) FROM chunks c, unnest(c.tags) AS t
                     WHERE c.id = (SELECT min(f.id) FROM chunks f WHERE f.document_id = d.id)),
                    ARRAY[]::text[])
WHERE d.tags IS NULL;
CREATE INDEX IF NOT EXISTS idx_documents_tags ON documents USING gin (tags);
-- Equality and one-of on frontmatter fields (`frontmatter @? '$."year" ? (@ == 2021)'`).
CREATE INDEX IF NOT EXISTS idx_documents_frontmatter ON documents
  USING gin (frontmatter jsonb_path_ops);
-- Folder prefixes (`relative_path LIKE 'reports/2021/%'`).
CREATE INDEX IF NOT EXISTS idx_documents_path_prefix ON documents
  (knowledge_base_id, relative_path text_pattern_ops);
-- Title substrings, ignoring case (the name a document is cited by when it has no title).
DROP INDEX IF EXISTS idx_documents_title_trgm;
CREATE INDEX IF NOT EXISTS idx_documents_title_trgm_v2 ON documents
  USING gin (lower(coalesce(title, frontmatter ->> 'title', source_name, relative_path))
             gin_trgm_ops);
