"""Operations: running an installation rather than answering from it.

The embedded PostgreSQL and `rag pg`, `rag serve` (the server with its background worker and
folder watch), `rag db` (schema and vector index), `rag config`, whole-installation backup and
restore, and the readiness checks. It sits above the apps it starts and inspects, so it imports
them directly.
"""
