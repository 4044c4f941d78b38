from django.apps import AppConfig


class WorkbenchConfig(AppConfig):
    name = "workbench"
    verbose_name = "Workbench"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers the evaluation-run job handler, wherever a worker runs.
        from workbench import evaluations  # noqa: F401
