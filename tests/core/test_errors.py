"""One error class per code, each code in the one table of HTTP statuses and exit codes."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

from core.errors import ERROR_TABLE, EXIT_NOT_READY, LocalRagError
from tests.test_architecture import LAYERS


def all_error_classes() -> list[type[LocalRagError]]:
    """Every subclass of LocalRagError defined anywhere in the project's packages."""
    for package in LAYERS:
        module = importlib.import_module(package)
        for info in pkgutil.walk_packages(module.__path__, prefix=f"{package}."):
            importlib.import_module(info.name)
    found, pending = [], [LocalRagError]
    while pending:
        for subclass in pending.pop().__subclasses__():
            found.append(subclass)
            pending.append(subclass)
    return found


def test_every_error_class_has_its_code_in_the_table():
    classes = all_error_classes()
    # The walk really reached every app (one error of each, from modules nothing else imports).
    assert {"EmbeddedPostgresError", "VaultNotFound", "RetrievalNotReady", "LLMTimeout"} <= {
        cls.__name__ for cls in classes}
    missing = {cls.__qualname__: cls.code for cls in classes if cls.code not in ERROR_TABLE}
    assert missing == {}


def test_each_code_has_exactly_one_class():
    owners: dict[str, list[str]] = {}
    for cls in all_error_classes():
        owners.setdefault(cls.code, []).append(f"{cls.__module__}.{cls.__qualname__}")
    assert {code: names for code, names in owners.items() if len(names) > 1} == {}


def test_a_class_with_a_code_missing_from_the_table_fails_when_defined():
    with pytest.raises(TypeError, match="not in core.errors.ERROR_TABLE"):
        type("Unlisted", (LocalRagError,), {"code": "no_such_code"})


def test_status_and_exit_code_come_from_the_table():
    from core.db import SchemaNotInitialized

    error = SchemaNotInitialized("x")
    assert (error.http_status, error.exit_code) == (503, EXIT_NOT_READY)
    assert error.as_body() == {"error": {"code": "schema_not_initialized", "message": "x",
                                         "details": {}}}
