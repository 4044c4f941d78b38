"""Sessions that survive a restart (RAG_SECRET_KEY kept in `.env` by `rag serve`), the settings
for running behind a TLS proxy, and the admin under the workbench's Content-Security-Policy."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

import pytest

from core.config import ConfigError, config_load
from ops.env_file import env_file_update, secret_key_persist
from ops.serving import serve_secret_key_ensure
from tests.conftest import cli_env
from tests.harness import ROOT
from workbench.security import POLICY

KEY = "k" * 50


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname='x'\n")
    (tmp_path / ".env.sample").write_text("# sample\nRAG_TOP_K=5\nRAG_SECRET_KEY=\n")
    return tmp_path


def test_serve_makes_a_key_once_and_keeps_it_in_a_private_env_file(project: Path):
    config = config_load(environ={}, start_dir=project)
    note = serve_secret_key_ensure(config=config)
    env_file = project / ".env"
    assert note is not None and str(env_file) in note
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    kept = config_load(environ={}, start_dir=project)
    assert len(kept.rag_secret_key) >= 32 and kept.sources["RAG_SECRET_KEY"] == ".env"
    assert "RAG_TOP_K=5" in env_file.read_text()  # made from the sample, the rest kept
    assert serve_secret_key_ensure(config=kept) is None  # the next start keeps it
    assert config_load(environ={}, start_dir=project).rag_secret_key == kept.rag_secret_key


def test_the_checkouts_sample_never_receives_a_secret(project: Path):
    config = config_load(environ={}, start_dir=project, env_file=project / ".env.sample")
    assert secret_key_persist(config=config, key=KEY) is None
    assert "k" * 50 not in (project / ".env.sample").read_text()
    assert serve_secret_key_ensure(config=config).startswith("warning: no .env")


def test_env_file_update_replaces_a_value_in_place_and_keeps_backslashes(project: Path):
    (project / ".env").write_text(f"A=1\nRAG_SECRET_KEY={'o' * 40}\nB=2\n")
    config = config_load(environ={}, start_dir=project)
    assert env_file_update(config=config, values={"RAG_SECRET_KEY": "new\\1" + "x" * 40}) == (
        project / ".env", False)
    assert (project / ".env").read_text() == f"A=1\nRAG_SECRET_KEY=new\\1{'x' * 40}\nB=2\n"


def test_a_short_key_is_refused_naming_the_variable_and_a_key_is_never_shown(project: Path):
    with pytest.raises(ConfigError) as refused:
        config_load(environ={"RAG_SECRET_KEY": "short"}, start_dir=project)
    assert refused.value.variable == "RAG_SECRET_KEY"
    config = config_load(environ={"RAG_SECRET_KEY": KEY}, start_dir=project)
    assert ("RAG_SECRET_KEY", "<set>", "env") in config.display_items()
    assert KEY not in repr(config)


def _settings(**env: str) -> list[str]:
    code = ("import django, os; os.environ['DJANGO_SETTINGS_MODULE'] = 'localrag_site.settings'; "
            "django.setup(); from django.conf import settings as s; "
            "print(s.SECRET_KEY); print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, "
            "s.SECURE_PROXY_SSL_HEADER, s.SECURE_HSTS_SECONDS)")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=cli_env(**env),
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_two_processes_with_the_kept_key_sign_alike_and_without_it_do_not():
    assert _settings(RAG_SECRET_KEY=KEY)[0] == _settings(RAG_SECRET_KEY=KEY)[0] == KEY
    assert _settings(RAG_SECRET_KEY="")[0] != _settings(RAG_SECRET_KEY="")[0]


def test_behind_a_tls_proxy_cookies_are_secure_and_hsts_is_sent_when_asked():
    assert _settings(RAG_TLS_PROXY="false")[1] == "False False None 0"
    assert _settings(RAG_TLS_PROXY="true", RAG_HSTS_SECONDS="31536000")[1] == (
        "True True ('HTTP_X_FORWARDED_PROTO', 'https') 31536000")


def test_the_admin_pages_carry_the_content_security_policy(admin_client):
    response = admin_client.get("/admin/")
    assert response.status_code == 200
    assert response["Content-Security-Policy"] == POLICY
    assert response["X-Content-Type-Options"] == "nosniff"
    assert admin_client.get("/admin/login/")["Content-Security-Policy"] == POLICY
