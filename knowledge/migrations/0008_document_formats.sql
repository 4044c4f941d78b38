-- Documents beyond Markdown (PDF, DOCX, TXT; parsing/formats/). Existing rows are notes, so
-- `format` defaults to 'markdown'; every other column is nullable or defaulted, and an insert
-- naming only the first release's columns keeps working.
--   title           the PDF's or DOCX's metadata title, else the file name without extension
--   page_count      pages of a PDF (NULL where a format has no reliable pages: notes, DOCX, TXT)
--   ocr_page_count  pages whose text came from OCR
--   metadata        per-format facts: extractor, outline, OCR pages and their mean confidence,
--                   pages left out (no OCR installed, per-run OCR cap, page limit)
ALTER TABLE documents ADD COLUMN IF NOT EXISTS format TEXT NOT NULL DEFAULT 'markdown';
ALTER TABLE documents ADD COLUMN IF NOT EXISTS title TEXT;
ALTER TABLE documents ADD COLUMN IF NOT EXISTS page_count INTEGER;
ALTER TABLE documents ADD COLUMN IF NOT EXISTS ocr_page_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE documents ADD COLUMN IF NOT EXISTS metadata JSONB NOT NULL DEFAULT '{}'::jsonb;

-- The pages a chunk's text comes from, 1-based as a PDF viewer's page counter shows them;
-- NULL for formats without pages (notes, DOCX, TXT).
ALTER TABLE chunks ADD COLUMN IF NOT EXISTS page_start INTEGER;
ALTER TABLE chunks ADD COLUMN IF NOT EXISTS page_end INTEGER;
