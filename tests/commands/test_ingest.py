"""`rag ingest` as a subprocess: the summary line, warnings and a bad path."""

from __future__ import annotations


def test_ingest_cli_summary_and_bad_path(clean_tables, run_cli, tmp_path):
    (tmp_path / "a.md").write_text("# A\n\nBody.\n")
    (tmp_path / "bad.md").write_bytes(b"\xff\xfe\x00binary")
    result = run_cli("ingest", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "1 added, 0 updated, 0 deleted, 0 unchanged" in result.stdout
    assert "warning: bad.md:" in result.stderr
    missing = run_cli("ingest", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "vault_not_found" in missing.stderr
