-- Knowledge bases. A knowledge base has sources: vault folders an operator registered, and its
-- own upload area. A source's path is the canonical folder, the very value documents.vault_path
-- holds for its documents, so a document belongs to one source and through it to one base.
CREATE TABLE IF NOT EXISTS knowledge_bases (
  id BIGSERIAL PRIMARY KEY,
  slug TEXT NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
  name TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS knowledge_base_sources (
  id BIGSERIAL PRIMARY KEY,
  knowledge_base_id BIGINT NOT NULL REFERENCES knowledge_bases(id) ON DELETE RESTRICT,
  kind TEXT NOT NULL CHECK (kind IN ('vault', 'uploads')),
  path TEXT NOT NULL UNIQUE,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS idx_kb_sources_knowledge_base ON knowledge_base_sources (knowledge_base_id);

-- Whether a base's text may leave this machine (embeddings/outbound.py): `local-only` (the
-- default for every base created from now on) or `allowed`. Bases that existed before the
-- policy keep what they did then, `allowed`; this runs before `default` is first inserted, so
-- a new installation's `default` is local-only.
ALTER TABLE knowledge_bases ADD COLUMN IF NOT EXISTS outbound TEXT;
UPDATE knowledge_bases SET outbound = 'allowed' WHERE outbound IS NULL;
ALTER TABLE knowledge_bases ALTER COLUMN outbound SET DEFAULT 'local-only';
ALTER TABLE knowledge_bases ALTER COLUMN outbound SET NOT NULL;
DO $$ BEGIN
  ALTER TABLE knowledge_bases ADD CONSTRAINT knowledge_bases_outbound_check
    CHECK (outbound IN ('local-only', 'allowed'));
EXCEPTION WHEN duplicate_object THEN NULL;
END $$;

INSERT INTO knowledge_bases (slug, name, description)
VALUES ('default', 'Default', 'Vaults ingested without a knowledge base of their own.')
ON CONFLICT (slug) DO NOTHING;
