"""Parsing: documents and notes to text, blocks, chunks and lexical terms.

Pure code with no tables and no database: reading a vault folder safely (which files are notes
and documents, each within its size bound), the formats (PDF with OCR, Word, plain text),
Obsidian Markdown and its sidecar files, heading- and page-aware chunking, and the lexical
analyzer that makes the terms chunks are stored and queries are read with. It imports only
`core`, so ingest (knowledge), the search index (index) and retrieval all build on the same
rules.
"""
