"""The test-database guard refuses anything that could be the application's data."""

from __future__ import annotations

import pytest

from tests.harness import UnsafeTestDatabase, assert_safe_test_database


def test_name_without_test_suffix_is_refused():
    with pytest.raises(UnsafeTestDatabase, match="does not end with '_test'"):
        assert_safe_test_database(test_url="postgresql://u@h/local_rag",
                                  main_url="postgresql://u@h/other")


def test_same_name_as_database_url_is_refused():
    with pytest.raises(UnsafeTestDatabase, match="both name"):
        assert_safe_test_database(test_url="postgresql://u@h/app_test",
                                  main_url="postgresql://u@other:5433/app_test")


def test_distinct_test_database_is_accepted():
    assert assert_safe_test_database(test_url="postgresql://u@h/local_rag_test",
                                     main_url="postgresql://u@h/local_rag") == "local_rag_test"


def test_pytest_aborts_before_touching_a_badly_named_database(tmp_path):
    import subprocess
    import sys

    from tests.conftest import cli_env
    from tests.harness import ROOT

    env = cli_env(TEST_DATABASE_URL="postgresql://u@127.0.0.1:1/local_rag")
    env["LOCALRAG_ENV_FILE"] = str(ROOT / ".env.sample")
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             str(ROOT / ("tests/test_harness.py"
                                         "::test_distinct_test_database_is_accepted"))],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 3
    assert "unsafe test database" in result.stdout + result.stderr
