from django.apps import AppConfig


class AuditConfig(AppConfig):
    """The append-only audit log: its table, recording, the admin page and `rag audit`."""

    name = "audit"
    verbose_name = "Audit log"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Django and django-axes announce failed sign-ins and lock-outs only by signal.
        from audit import signin

        signin.receivers_connect()
