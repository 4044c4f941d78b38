"""The audit log: one append-only row in `audit_logs` for every change an operator or caller
makes (bases, grants, tokens, users, documents, outbound policy, backup, restore, index rebuilds,
settings written by the CLI) and every failed sign-in or lock-out. Written by audit/records.py
only; read by `rag audit`, the admin and `GET /audit`; a trigger refuses UPDATE and DELETE, and
only `audit_logs_prune()` deletes, and only rows past RAG_AUDIT_RETENTION_DAYS."""
