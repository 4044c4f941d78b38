-- Vaults indexed before knowledge bases existed become sources of `default` (idempotent).
INSERT INTO knowledge_base_sources (knowledge_base_id, kind, path)
SELECT (SELECT id FROM knowledge_bases WHERE slug = 'default'), 'vault', v.vault_path
FROM (SELECT DISTINCT vault_path FROM documents WHERE knowledge_base_id IS NULL) v
ON CONFLICT (path) DO NOTHING;
UPDATE documents d SET knowledge_base_id = s.knowledge_base_id
FROM knowledge_base_sources s
WHERE d.knowledge_base_id IS NULL AND s.path = d.vault_path;
UPDATE chunks c SET knowledge_base_id = d.knowledge_base_id
FROM documents d
WHERE c.knowledge_base_id IS NULL AND d.id = c.document_id AND d.knowledge_base_id IS NOT NULL;

-- Rows written by a client that names only the first release's columns still get their base:
-- a document from its source (or `default`), a chunk from its document.
CREATE OR REPLACE FUNCTION documents_knowledge_base_fill() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.knowledge_base_id IS NULL THEN
    SELECT s.knowledge_base_id INTO NEW.knowledge_base_id
    FROM knowledge_base_sources s WHERE s.path = NEW.vault_path;
    IF NEW.knowledge_base_id IS NULL THEN
      SELECT id INTO NEW.knowledge_base_id FROM knowledge_bases WHERE slug = 'default';
    END IF;
  END IF;
  RETURN NEW;
END
$$;
CREATE OR REPLACE TRIGGER documents_knowledge_base_fill BEFORE INSERT ON documents
  FOR EACH ROW WHEN (NEW.knowledge_base_id IS NULL)
  EXECUTE FUNCTION documents_knowledge_base_fill();

CREATE OR REPLACE FUNCTION chunks_knowledge_base_fill() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.knowledge_base_id IS NULL THEN
    SELECT knowledge_base_id INTO NEW.knowledge_base_id FROM documents WHERE id = NEW.document_id;
  END IF;
  RETURN NEW;
END
$$;
CREATE OR REPLACE TRIGGER chunks_knowledge_base_fill BEFORE INSERT ON chunks
  FOR EACH ROW WHEN (NEW.knowledge_base_id IS NULL)
  EXECUTE FUNCTION chunks_knowledge_base_fill();

-- A document moved to another base takes its chunks along, in the same statement's transaction.
CREATE OR REPLACE FUNCTION documents_knowledge_base_follow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE chunks SET knowledge_base_id = NEW.knowledge_base_id WHERE document_id = NEW.id;
  RETURN NULL;
END
$$;
CREATE OR REPLACE TRIGGER documents_knowledge_base_follow AFTER UPDATE OF knowledge_base_id ON documents
  FOR EACH ROW WHEN (OLD.knowledge_base_id IS DISTINCT FROM NEW.knowledge_base_id)
  EXECUTE FUNCTION documents_knowledge_base_follow();
