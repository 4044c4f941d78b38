"""The access tests call the API as the API tests do, with the same test client."""

from tests.api.conftest import client  # noqa: F401
