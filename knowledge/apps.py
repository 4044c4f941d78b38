from django.apps import AppConfig


class KnowledgeConfig(AppConfig):
    name = "knowledge"
    verbose_name = "Knowledge base"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers the document jobs' handlers, wherever a worker runs.
        from knowledge import documents  # noqa: F401
