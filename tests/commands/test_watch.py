"""Watch mode end to end: `rag serve` with RAG_WATCH=true re-indexes a vault as its notes are
edited (Obsidian-style atomic saves), added, renamed and deleted, survives the folder going away
(a warning, nothing deleted) and watches it again once it is back; `rag watch` does the same in
the foreground and stops on Ctrl-C. Every wait polls, under a generous bound."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from django.db import connection

from tests.commands.test_serve import Server
from tests.conftest import cli_env
from tests.harness import ROOT

BOUND_SECONDS = 20.0


def eventually(condition: Callable[[], bool], *, what: str, log: Callable[[], str]) -> float:
    """Seconds until `condition` held; fails the test past BOUND_SECONDS."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > BOUND_SECONDS:
            pytest.fail(f"not within {BOUND_SECONDS:.0f} s: {what}\n{log()[-4000:]}")
        time.sleep(0.1)
    return time.monotonic() - started


def save(path: Path, text: str) -> None:
    """Save as Obsidian does: a temporary file beside the note, renamed over it."""
    temporary = path.parent / f".{path.name}.tmp"
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def found(url: str, word: str, *, before_first_ingest: bool = False) -> list[str]:
    """The notes whose chunks a search for `word` returns holding it (the fake embedder makes
    every search return something: the text is what counts). `before_first_ingest`: the
    index may not hold a single vector yet, which the API answers 503 retrieval_not_ready."""
    response = httpx.post(f"{url}/search", json={"query": word, "top_k": 5}, timeout=10)
    if before_first_ingest and response.status_code == 503:
        assert response.json()["error"]["code"] == "retrieval_not_ready", response.text
        return []
    assert response.status_code == 200, response.text
    return sorted({result["source"] for result in response.json()["results"]
                   if word in result["content"]})


def indexed(vault: Path) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT relative_path FROM documents WHERE vault_path = %s "
                       "ORDER BY relative_path", [str(vault.resolve())])
        return [row[0] for row in cursor.fetchall()]


def test_serve_with_watch_follows_edits_renames_deletes_and_the_folder_coming_back(
        clean_tables, tmp_path):
    vault = tmp_path / "vault"
    (vault / ".obsidian").mkdir(parents=True)
    (vault / "Walrus.md").write_text("# Walrus\n\nThe walrus hauls out on ice floes.\n")
    (vault / "Heron.md").write_text("# Heron\n\nThe heron wades in shallow marshes.\n")
    server = Server(cli_env(RAG_WATCH="true", VAULT_PATH=str(vault)))
    try:
        log = server.output
        url = server.url
        assert "watch:     every vault folder" in log()
        # Started with an index that knows nothing: the watch's first sync reads the vault.
        eventually(lambda: found(url, "floes", before_first_ingest=True) == ["Walrus.md"],
                   what="the vault indexed at start", log=log)

        save(vault / "Walrus.md", "# Walrus\n\nThe walrus eats quokkaberry clams.\n")
        (vault / ".obsidian" / "workspace.json").write_text('{"active": "Walrus.md"}')
        eventually(lambda: found(url, "quokkaberry") == ["Walrus.md"],
                   what="an edited note searchable", log=log)

        (vault / "Narwhal.md").write_text("# Narwhal\n\nThe narwhalite tusk spirals.\n")
        eventually(lambda: found(url, "narwhalite") == ["Narwhal.md"],
                   what="an added note searchable", log=log)

        (vault / "Birds").mkdir()
        os.replace(vault / "Heron.md", vault / "Birds" / "Grey Heron.md")
        eventually(lambda: indexed(vault) == ["Birds/Grey Heron.md", "Narwhal.md", "Walrus.md"],
                   what="a renamed note under its new path only", log=log)
        assert found(url, "marshes") == ["Birds/Grey Heron.md"]

        (vault / "Narwhal.md").unlink()
        eventually(lambda: "Narwhal.md" not in indexed(vault),
                   what="a deleted note gone from the index", log=log)
        assert found(url, "narwhalite") == []
        assert "re-indexed 1 file in" in log()

        shutil.rmtree(vault)
        eventually(lambda: "is gone; nothing is deleted from the index" in log(),
                   what="a warning that the folder is gone", log=log)
        time.sleep(1.5)  # longer than a burst's quiet time: a sync would have run by now
        assert indexed(vault) == ["Birds/Grey Heron.md", "Walrus.md"]
        assert found(url, "quokkaberry") == ["Walrus.md"]

        (vault / "Birds").mkdir(parents=True)
        (vault / "Walrus.md").write_text("# Walrus\n\nThe walrus eats quokkaberry clams.\n")
        (vault / "Birds" / "Grey Heron.md").write_text("# Heron\n\nThe heron wades.\n")
        (vault / "Puffin.md").write_text("# Puffin\n\nThe puffin nests in burrows.\n")
        eventually(lambda: found(url, "burrows") == ["Puffin.md"],
                   what="the folder watched again once it is back", log=log)
        assert "is back" in log()
        (vault / "Puffin.md").write_text("# Puffin\n\nThe puffin dives for sandeels.\n")
        eventually(lambda: found(url, "sandeels") == ["Puffin.md"],
                   what="an edit after the folder came back", log=log)

        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(timeout=30) == 0
    finally:
        server.stop()


def test_rag_watch_reindexes_an_edit_and_stops_on_ctrl_c(clean_tables, tmp_path):
    vault = tmp_path / "vault"
    vault.mkdir()
    note = vault / "Otter.md"
    note.write_text("# Otter\n\nThe otter floats on its back.\n")
    output = tempfile.TemporaryFile()
    process = subprocess.Popen([sys.executable, str(ROOT / "manage.py"), "watch", str(vault)],
                               cwd=ROOT, env=cli_env(), stdout=output, stderr=subprocess.STDOUT)

    def log() -> str:
        output.seek(0)
        return output.read().decode(errors="replace")

    try:
        eventually(lambda: "up to date (1 files checked" in log() or "re-indexed 1 file" in log(),
                   what="the first sync", log=log)
        assert f"watching {vault.resolve()} (kb default)" in log()
        save(note, "# Otter\n\nThe otter cracks urchins with a pebble.\n")

        def stored() -> bool:
            with connection.cursor() as cursor:
                cursor.execute("SELECT count(*) FROM chunks c JOIN documents d ON d.id = "
                               "c.document_id WHERE d.vault_path = %s AND c.content LIKE %s",
                               [str(vault.resolve()), "%urchins%"])
                return cursor.fetchone()[0] == 1

        eventually(stored, what="the edit indexed", log=log)
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=15) == 0, log()
        assert "stopping" in log()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_rag_watch_stopped_while_idle_announces_no_ingest(clean_tables, tmp_path):
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Otter.md").write_text("# Otter\n\nThe otter floats on its back.\n")
    stdout, stderr = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    process = subprocess.Popen([sys.executable, str(ROOT / "manage.py"), "watch", str(vault)],
                               cwd=ROOT, env=cli_env(), stdout=stdout, stderr=stderr)

    def read(output) -> str:
        output.seek(0)
        return output.read().decode(errors="replace")

    try:
        # Printed once the first sync has ended: the watch is idle from here on.
        eventually(lambda: "re-indexed 1 file" in read(stdout) or "up to date" in read(stdout),
                   what="the first sync", log=lambda: read(stdout) + read(stderr))
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=15) == 0, read(stderr)
        assert read(stderr).splitlines() == ["stopping"]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
