"""`rag vault list | forget` and the ingest refusals that name a vault, as subprocesses."""

from __future__ import annotations

import json
from pathlib import Path


def write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_list_forget_and_refusals(clean_tables, run_cli, tmp_path: Path):
    vault = tmp_path / "vault"
    write(vault, "a.md", "# A\n\nAlpha.\n")
    write(vault, "sub/b.md", "# B\n\nBeta.\n")
    assert run_cli("ingest", str(vault)).returncode == 0

    listed = run_cli("vault", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    [entry] = json.loads(listed.stdout)
    assert (entry["vault_path"], entry["documents"], entry["last_run_status"]) == (
        str(vault.resolve()), 2, "success")

    nested = run_cli("ingest", str(vault / "sub"))
    assert nested.returncode == 2 and "vault_overlap" in nested.stderr
    assert str(vault.resolve()) in nested.stderr

    for note in vault.rglob("*.md"):
        note.unlink()
    emptied = run_cli("ingest", str(vault))
    assert emptied.returncode == 2 and "vault_empty" in emptied.stderr
    assert "--prune" in emptied.stderr

    forgotten = run_cli("vault", "forget", str(vault))
    assert forgotten.returncode == 0 and "2 documents removed" in forgotten.stdout
    assert json.loads(run_cli("vault", "list", "--json").stdout) == []
    unknown = run_cli("vault", "forget", str(vault))
    assert unknown.returncode == 2 and "vault_not_found" in unknown.stderr
    missing_path = run_cli("vault", "forget")
    assert missing_path.returncode == 2 and "needs the PATH" in missing_path.stderr
