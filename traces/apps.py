from django.apps import AppConfig


class TracesConfig(AppConfig):
    """Traces of searches and answers: recording, statistics, pruning, a read-only admin and the
    `traces` command."""

    name = "traces"
    verbose_name = "Traces"
    default_auto_field = "django.db.models.BigAutoField"
