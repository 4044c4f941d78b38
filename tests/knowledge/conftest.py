"""Fixtures of the upgrade tests here (test_db_upgrade.py) and the upload-store restore tests:
the restore fixtures of tests/ops/conftest.py."""

from tests.ops.conftest import archive, empty_database, new_database, project  # noqa: F401
