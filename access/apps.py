from django.apps import AppConfig


class AccessConfig(AppConfig):
    """Who may read and maintain what: callers and scopes, grants, API tokens, the API's bearer
    authentication, their admin and the `token` command."""

    name = "access"
    verbose_name = "Access"
    default_auto_field = "django.db.models.BigAutoField"
    # The tables of this app's migrations that no model names (tests/test_schema_ownership.py).
    tables_without_model = ("token_failures",)
