"""Watching vault folders: their files' changes become ingests of the knowledge app, by
`rag watch` and beside `rag serve` (RAG_WATCH). It owns no table: what it syncs is stored by the
knowledge app, and a sync runs as a job of the queue."""
