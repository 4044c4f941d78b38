-- Vectors inline (PLAIN) instead of pgvector's default EXTERNAL: a vector(1024) is 4 KB, over
-- the ~2 KB TOAST threshold, so EXTERNAL keeps every one out of line and the exact scan paid a
-- TOAST index probe plus three chunk reads per vector (~3–4 µs: 280–460 ms at 100k vectors;
-- inline 150–180 ms, and 10 vs 34 ms at 10k; bench/ann.py --storage). The cost: one row per
-- 8 KB page (the heap grows ~1.5×) and scans of this table that do not need the vector read
-- those pages too. Values and results are unchanged. Only rows written from now on move inline;
-- `VACUUM FULL embeddings` (which locks the table while it runs) rewrites the existing ones.
-- A row must fit in one page this way: revisit before storing vectors of over ~2,000 floats.
-- Altered only when needed: SET STORAGE takes an exclusive lock on the table.
DO $$
BEGIN
  IF (SELECT attstorage FROM pg_attribute
      WHERE attrelid = 'embeddings'::regclass AND attname = 'embedding') <> 'p' THEN
    ALTER TABLE embeddings ALTER COLUMN embedding SET STORAGE PLAIN;
  END IF;
END
$$;
