"""Where a base's index lives on disk, what it reflects, and who may write it.

One folder per database and base: `<RAG_SEARCH_INDEX_DIR>/<database key>/kb-<id>/`. The
database key names the server the index was read from (host, port, database), the cluster's
system identifier and the oid of its state table (index/sql.py STATE): an index built from a
replica is that replica's, a new cluster on the same host and port never meets an older one's
index, and a restored database (its tables created anew) never meets an index of the data it
replaced.

A base's folder holds `manifest.json` (what the index reflects: the generation of each part,
their folders, when and how long they were built), the lexical index (a tantivy folder) and
the vector index (a folder of .npy arrays), and `writer.lock`. The manifest is replaced by a
rename, after the parts it names are on disk: a reader sees the old index or the new one,
never half of one. Every writer holds `writer.lock` (flock) for the whole catch-up or
rebuild: one writer at a time per base across processes, the others wait or skip.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from core.config import Config

MANIFEST = "manifest.json"
LOCK = "writer.lock"
FORMAT = 1


@dataclass
class Part:
    """One part of a base's index: the generation it reflects and its folder in the base's."""

    generation: int
    folder: str
    documents: int  # chunks (lexical) or vectors (vector) in it
    built_at: float  # epoch seconds of its last build or catch-up
    rebuilt_at: float  # epoch seconds of its last full build
    build_seconds: float  # how long that full build took
    provider: str = ""  # vector part: whose vectors
    model: str = ""


@dataclass
class Manifest:
    knowledge_base_id: int
    lexical: Part | None = None
    vectors: Part | None = None
    format: int = FORMAT


def database_key(*, host: str, port: str, database: str, identity: str) -> str:
    """The folder name of one database's indexes (see the module docstring)."""
    text = f"{host}:{port}/{database}/{identity}"
    return f"{database}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def base_folder(*, config: Config, key: str, knowledge_base_id: int) -> Path:
    return config.search_index_dir / key / f"kb-{knowledge_base_id}"


def manifest_read(folder: Path) -> Manifest | None:
    """The base's manifest; None when there is none or it cannot be read (a damaged index is
    rebuilt, never trusted)."""
    try:
        raw = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        if raw.get("format") != FORMAT:
            return None
        return Manifest(knowledge_base_id=int(raw["knowledge_base_id"]),
                        lexical=Part(**raw["lexical"]) if raw.get("lexical") else None,
                        vectors=Part(**raw["vectors"]) if raw.get("vectors") else None)
    except (OSError, ValueError, TypeError, KeyError):
        return None


def manifest_write(folder: Path, manifest: Manifest) -> None:
    """Replace the manifest atomically (written beside it, flushed, renamed over it)."""
    folder.mkdir(parents=True, exist_ok=True)
    temporary = folder / f".{MANIFEST}.{os.getpid()}"
    with temporary.open("w", encoding="utf-8") as handle:
        json.dump(asdict(manifest), handle, indent=1, sort_keys=True)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, folder / MANIFEST)


def manifest_stamp(folder: Path) -> tuple[int, int] | None:
    """What changes when the manifest is replaced (its inode and modification time); None
    without one."""
    try:
        stat = (folder / MANIFEST).stat()
    except OSError:
        return None
    return stat.st_ino, stat.st_mtime_ns


@contextlib.contextmanager
def writer_lock(folder: Path, *, wait: bool) -> Iterator[bool]:
    """Hold the base's writer lock for the block; yields False (holding nothing) when `wait`
    is off and another process holds it. The kernel releases it if the process dies."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / LOCK).open("a") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def folders_unused_remove(folder: Path, manifest: Manifest) -> None:
    """Remove the parts' folders the manifest no longer names (an earlier build's, or one a
    killed build left half-written). Only under the writer lock."""
    named = {part.folder for part in (manifest.lexical, manifest.vectors) if part is not None}
    for entry in folder.iterdir():
        if entry.is_dir() and entry.name not in named and entry.name.startswith(
                ("lexical-", "vectors-")):
            shutil.rmtree(entry, ignore_errors=True)


def folder_bytes(folder: Path) -> int:
    """Bytes on disk under `folder` (0 when it is gone)."""
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                total += (Path(root) / name).stat().st_size
    return total
