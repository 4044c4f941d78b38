"""The Django test client for the API tests: errors come back as responses, never raised."""

from __future__ import annotations

import pytest
from django.test import Client


@pytest.fixture
def client() -> Client:
    return Client(raise_request_exception=False)
