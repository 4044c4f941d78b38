"""Migration operations shared by the apps' migrations."""

from __future__ import annotations

from django.db import migrations


def content_types_moved(*, models: tuple[str, ...], old_app: str,
                        new_app: str) -> migrations.RunPython:
    """Relabel the content types of models that moved from `old_app` to `new_app` (their tables
    stay), so admin history and any permission given on them follow the models instead of
    pointing at a model that no longer exists. A label the new app already has is left alone."""

    def forwards(apps, schema_editor) -> None:
        _relabel(apps, models=models, source=old_app, target=new_app)

    def backwards(apps, schema_editor) -> None:
        _relabel(apps, models=models, source=new_app, target=old_app)

    return migrations.RunPython(forwards, backwards)


def _relabel(apps, *, models: tuple[str, ...], source: str, target: str) -> None:
    content_type = apps.get_model("contenttypes", "ContentType")
    for model in models:
        if not content_type.objects.filter(app_label=target, model=model).exists():
            content_type.objects.filter(app_label=source, model=model).update(app_label=target)
