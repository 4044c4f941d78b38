"""The database schema of every app, each in its own migrations, applied layer by layer.

Each app creates its own tables, functions and triggers in its migrations (SQL in a .sql file
beside the migration, core/migration_ops.py RunSQLFile) and nobody else's
(tests/test_schema_ownership.py). `rag db init` migrates the apps floor first, so an app's SQL
always finds the tables of the layers below it (index's triggers on knowledge's chunks), and a
restore runs the same files in the same order."""

from __future__ import annotations

from pathlib import Path

from django.core.management import call_command
from django.db.migrations.loader import MigrationLoader

from core.migration_ops import RunSQLFile

# App labels, floor first, as tests/test_architecture.py layers the packages (peers in the order
# docs/architecture.md names them). An app without migrations is passed over.
# Pure-code packages (parsing) are not Django apps and have no schema.
SCHEMA_LAYERS = ("core", "audit", "access", "jobs", "traces", "embeddings", "knowledge",
                 "review", "watching", "search_index", "retrieval", "answering", "conversations",
                 "evaluation", "ops", "workbench")


def schema_migrate(*, verbosity: int = 0) -> None:
    """Apply every migration: each app of SCHEMA_LAYERS in turn (with the migrations it depends
    on), then Django's own apps and the others."""
    migrated = MigrationLoader(None, ignore_no_migrations=True).migrated_apps
    for app_label in SCHEMA_LAYERS:
        if app_label in migrated:
            call_command("migrate", app_label, interactive=False, verbosity=verbosity)
    call_command("migrate", interactive=False, verbosity=verbosity)


def schema_sql_files() -> list[Path]:
    """The SQL files of every app's migrations, in the order a new database applies them."""
    loader = MigrationLoader(None, ignore_no_migrations=True)
    seen: set[tuple[str, str]] = set()
    files: list[Path] = []
    for app_label in SCHEMA_LAYERS:
        for leaf in loader.graph.leaf_nodes(app_label):
            for key in loader.graph.forwards_plan(leaf):
                if key in seen:
                    continue
                seen.add(key)
                files.extend(operation.path for operation in loader.graph.nodes[key].operations
                             if isinstance(operation, RunSQLFile))
    return files
