"""Durable background jobs in PostgreSQL: a queue of leased rows (queue.py, sql.py), the worker
that runs their handlers (worker.py) and a read-only admin (admin.py)."""
