"""Migration operations shared by the apps' migrations."""

from __future__ import annotations

from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps


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
