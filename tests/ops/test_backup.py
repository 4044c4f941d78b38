"""`rag backup` and `rag restore` as a disaster would use them: a project with a vault, an
uploaded PDF, an account and a token is backed up, its folder and cluster destroyed, and a fresh
cluster in another folder restored from the archive answers the same searches, accepts the same
token and can rebuild the upload from its restored file."""

from __future__ import annotations

import json
import shutil
import stat
import tarfile
from pathlib import Path

import httpx

from tests.commands.test_pg import pg_env  # noqa: F401 - the fixture
from tests.commands.test_serve import Server
from tests.commands.test_upload_serve import job_done
from tests.conftest import scratch_project_folder
from tests.harness import ROOT
from tests.parsing.formats.files import pdf_bytes

VAULT_QUERY = "客户 P1 工单应该怎么升级？"
UPLOAD_QUERY = "cassiterite greisen tin"


def searches(url: str, headers: dict) -> list[dict]:
    found = []
    for query, bases in ((VAULT_QUERY, None), (UPLOAD_QUERY, ["tin"])):
        body = {"query": query, "top_k": 5, **({"knowledge_bases": bases} if bases else {})}
        response = httpx.post(f"{url}/search", json=body, headers=headers, timeout=10)
        assert response.status_code == 200, response.text
        result = response.json()
        result.pop("trace_id")
        found.append(result)
    return found


def test_backup_destroy_restore_round_trip(scratch_project: Path, run_cli, pg_env,  # noqa: F811
                                           tmp_path):
    first = scratch_project

    def cli(*args: str, cwd: Path):
        result = run_cli(*args, env=pg_env, cwd=cwd)
        assert result.returncode == 0, f"{args}: {result.stdout}{result.stderr}"
        return result

    cli("pg", "start", cwd=first)
    cli("db", "init", cwd=first)
    vault = first / "vault"
    shutil.copytree(ROOT / "samples" / "acme-vault", vault)
    cli("ingest", str(vault), cwd=first)
    cli("kb", "create", "tin", "--name", "Tin project", cwd=first)
    cli("shell", "-c", "from django.contrib.auth import get_user_model; "
        "get_user_model().objects.create_superuser('maint', '', 'pw-unused-1x')", cwd=first)
    secret = cli("token", "create", "--user", "maint", cwd=first).stdout.strip()
    headers = {"Authorization": f"Bearer {secret}"}
    server = Server(pg_env, cwd=first)
    try:
        upload = httpx.post(f"{server.url}/knowledge-bases/tin/documents", headers=headers,
                            files={"file": ("Greisen report.pdf", pdf_bytes(
                                ["Cassiterite greisen veins carry tin at 0.6 percent Sn. " * 8,
                                 "Page two: access road and camp."]), "application/pdf")},
                            timeout=30).json()
        assert job_done(server.url, upload["job_id"], headers)["status"] == "succeeded"
        before = searches(server.url, headers)
    finally:
        server.stop()
    assert before[1]["results"][0]["document_id"] == upload["document_id"]

    archive = tmp_path / "site.tar"
    backed_up = cli("backup", str(archive), "--json", cwd=first)
    manifest = json.loads(backed_up.stdout)
    assert stat.S_IMODE(archive.stat().st_mode) == 0o600
    assert manifest["counts"]["documents"] == 10  # nine notes and the upload
    assert manifest["counts"]["auth_user"] == 1 and manifest["counts"]["knowledge_apitoken"] == 1
    assert manifest["counts"]["traces"] >= 2
    # The audit log travels too: the base and the token made by the CLI, the upload by the API.
    assert manifest["counts"]["audit_logs"] >= 3
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    assert names[0] == "database.pgdump" and names[-1] == "manifest.json"
    assert [entry["member"] for entry in manifest["uploads"]["files"]] == names[1:-1]
    assert len(names) == 3  # the dump, the one uploaded PDF, the manifest

    (backup_entry,) = json.loads(cli("audit", "--action", "backup.run", "--json",
                                     cwd=first).stdout)
    assert backup_entry["changes"]["path"] == str(archive)
    assert backup_entry["changes"]["bytes"] == archive.stat().st_size

    # The disaster: the cluster, the uploads and the vault are gone.
    cli("pg", "stop", cwd=first)
    shutil.rmtree(first)

    with scratch_project_folder() as second:
        cli("pg", "start", cwd=second)
        restored = cli("restore", str(archive), cwd=second)
        assert "10 documents" in restored.stdout and "1 uploaded files" in restored.stdout
        assert f"vault folder {vault} is not on this machine" in restored.stderr
        uploads = list((second / ".local" / "uploads").rglob("*.pdf"))
        assert len(uploads) == 1
        server = Server(pg_env, cwd=second)
        try:
            assert searches(server.url, headers) == before
            document = httpx.get(f"{server.url}/documents/{upload['document_id']}",
                                 headers=headers, timeout=10).json()
            assert (document["status"], document["page_count"]) == ("active", 2)
            # The restored upload is rebuilt from its restored file, at its new place.
            reindex = httpx.post(f"{server.url}/documents/{upload['document_id']}/reindex",
                                 headers=headers, timeout=10)
            assert reindex.status_code == 202, reindex.text
            assert job_done(server.url, reindex.json()["job_id"], headers)["status"] == (
                "succeeded")
            assert searches(server.url, headers)[1]["results"][0]["document_id"] == (
                upload["document_id"])
        finally:
            server.stop()

        log = json.loads(cli("audit", "--json", cwd=second).stdout)
        actions = [entry["action"] for entry in log]
        # Newest first: the reindex above, the restore, then the archive's own entries.
        assert actions[:2] == ["document.reindex", "restore.run"]
        assert {"knowledge_base.create", "token.create", "document.upload"} <= set(actions[2:])
        assert log[1]["source"] == "cli" and log[1]["actor"].startswith("cli:")
        assert log[0]["source"] == "api" and log[0]["actor"].endswith(" (maint)")

        again = run_cli("restore", str(archive), env=pg_env, cwd=second)
        assert again.returncode == 2
        assert "error [restore_refused]: database local_rag is not empty" in again.stderr
