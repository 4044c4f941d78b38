"""The restore fixtures (tests/ops/conftest.py), for the upload-store restore tests here."""

from tests.ops.conftest import archive, empty_database, new_database, project  # noqa: F401
