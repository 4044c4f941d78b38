"""Settings the CLI writes into `.env` (`rag config --create-env`, `rag llm use`) are audited
as one `settings.update` entry naming each setting, with its new value unless the setting is a
secret (then only that it was set). These commands also run before any database exists (a new
checkout's `make demo`): then the change is not recorded, and the command says so."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from django.db import transaction

from audit.records import AuditEvent, audit_record
from core.db import DatabaseUnavailable, SchemaNotInitialized, db_errors_translated
from core.settings_table import SETTINGS_BY_NAME

NOT_RECORDED = ("the change is not in the audit log: the database is not running or not set "
                "up yet")


def settings_change_audit(*, env_file: Path | None, values: Mapping[str, str]) -> bool:
    """One audit entry for `values` written to `env_file`; False when no database took it."""
    shown = {name: ("(set)" if _secret(name) and value else value)
             for name, value in values.items()}
    try:
        with db_errors_translated(), transaction.atomic():
            audit_record(AuditEvent(action="settings.update", object_type="env_file",
                                    object_name=str(env_file or ""),
                                    changes={"settings": shown}))
    except (DatabaseUnavailable, SchemaNotInitialized):
        return False
    return True


def _secret(name: str) -> bool:
    setting = SETTINGS_BY_NAME.get(name)
    # A name outside the table (a typo, a provider's own variable) is treated as a secret.
    return setting is None or setting.secret
