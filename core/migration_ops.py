"""Migration operations shared by the apps' migrations."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from django.db import migrations, router
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.operations.base import Operation
from django.db.migrations.state import StateApps


class RunSQLFile(migrations.RunSQL):
    """The .sql file beside a migration, named like it (`0005_documents_and_chunks.py` runs
    `0005_documents_and_chunks.sql`): the SQL of an app's own tables, functions and triggers.

    Every statement in such a file is idempotent (IF NOT EXISTS, CREATE OR REPLACE, updates that
    find nothing left to do on a second run): a database made before the apps' tables had
    migrations already holds what the file creates, and a restore runs every file again inside
    its transaction (ops/restore_catalogue.py). Unapplying changes nothing: rows are
    never dropped by going back a migration."""

    def __init__(self, migration_file: str) -> None:
        self.path = Path(migration_file).with_suffix(".sql")
        super().__init__(self.path.read_text(encoding="utf-8"), migrations.RunSQL.noop)

    def database_forwards(self, app_label: str, schema_editor: Any, from_state: Any,
                          to_state: Any) -> None:
        if router.allow_migrate(schema_editor.connection.alias, app_label, **self.hints):
            # Whole, as psql runs it, rather than split into statements by Django: the file's
            # functions and DO blocks hold semicolons and comments of their own.
            schema_editor.execute(self.sql, params=None)

    def describe(self) -> str:
        return f"Run {self.path.name}"

    def deconstruct(self) -> tuple[str, Sequence[Any], dict[str, Any]]:
        # What it was made from (its migration's file), not RunSQL's keywords.
        return Operation.deconstruct(self)


def content_types_moved(*, models: tuple[str, ...], old_app: str,
                        new_app: str) -> migrations.RunPython:
    """Relabel the content types of models that moved from `old_app` to `new_app` (their tables
    stay), so admin history and any permission given on them follow the models instead of
    pointing at a model that no longer exists. A label the new app already has is left alone."""

    def forwards(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
        _relabel(apps, models=models, source=old_app, target=new_app)

    def backwards(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
        _relabel(apps, models=models, source=new_app, target=old_app)

    return migrations.RunPython(forwards, backwards)


def _relabel(apps: StateApps, *, models: tuple[str, ...], source: str, target: str) -> None:
    content_type = apps.get_model("contenttypes", "ContentType")
    for model in models:
        if not content_type.objects.filter(app_label=target, model=model).exists():
            content_type.objects.filter(app_label=source, model=model).update(app_label=target)
