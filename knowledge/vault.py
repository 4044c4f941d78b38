"""The vault on disk: canonical paths, which files are notes, and reading them safely."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from core.errors import LocalRagError

DEFAULT_MAX_FILE_BYTES = 5 * 1024 * 1024
NOTE_SUFFIX = ".md"


class VaultNotFound(LocalRagError):
    code = "vault_not_found"


@dataclass(frozen=True)
class NoteFile:
    """A candidate note: where it is and how to name it in the index."""

    relative_path: str  # POSIX, relative to the canonical vault root
    file_path: Path  # resolved absolute path


@dataclass(frozen=True)
class NoteContent:
    text: str
    content_hash: str  # SHA-256 hex of the file's bytes
    mtime_ns: int
    size_bytes: int


class NoteRejected(Exception):
    """A file that cannot be indexed; the message names the reason."""


def vault_resolve(path: Path | str) -> Path:
    """Canonical vault root: `samples/acme-vault`, `./samples/acme-vault/` and the absolute path
    are one vault."""
    try:
        resolved = Path(path).expanduser().resolve(strict=True)
    except FileNotFoundError:
        raise VaultNotFound(f"vault path does not exist: {path}", details={"path": str(path)}) from None
    except (OSError, RuntimeError) as exc:  # a file in the path, no permission, a symlink loop
        reason = getattr(exc, "strerror", None) or str(exc)
        raise VaultNotFound(f"vault path is not usable: {path} ({reason})",
                            details={"path": str(path)}) from None
    if not resolved.is_dir():
        raise VaultNotFound(f"vault path is not a directory: {path}", details={"path": str(path)})
    return resolved


def vault_scan(*, root: Path) -> tuple[list[NoteFile], list[tuple[str, str]]]:
    """Every `*.md` under `root` (hidden folders such as .obsidian/.trash skipped, symlinks that
    leave the vault refused), sorted by relative path; plus (path, reason) warnings."""
    notes: list[NoteFile] = []
    warnings: list[tuple[str, str]] = []
    for folder, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(folder)
        kept = []
        for name in dirnames:
            if name.startswith("."):
                continue
            if (here / name).is_symlink():
                relative = (here / name).relative_to(root).as_posix()
                warnings.append((relative, "symlinked folder not followed"))
                continue
            kept.append(name)
        dirnames[:] = sorted(kept)
        for name in filenames:
            if not name.lower().endswith(NOTE_SUFFIX):
                continue
            link = here / name
            relative = link.relative_to(root).as_posix()
            try:
                target = link.resolve(strict=True)
            except (FileNotFoundError, RuntimeError, OSError):
                warnings.append((relative, "broken symlink"))
                continue
            if not target.is_relative_to(root):
                warnings.append((relative, "symlink points outside the vault; not indexed"))
                continue
            if not target.is_file():
                continue
            notes.append(NoteFile(relative_path=relative, file_path=target))
    notes.sort(key=lambda note: note.relative_path)
    return notes, warnings


def note_read(*, note: NoteFile, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> NoteContent:
    """Read, hash and decode one note; raises NoteRejected for binary, non-UTF-8 or huge files."""
    try:
        stat = note.file_path.stat()
        if stat.st_size > max_bytes:
            raise NoteRejected(f"file is larger than the {max_bytes:,}-byte limit "
                               f"({stat.st_size:,} bytes)")
        data = note.file_path.read_bytes()
    except OSError as exc:
        raise NoteRejected(f"cannot read file: {exc.strerror or exc}") from None
    if b"\x00" in data:
        raise NoteRejected("file contains NUL bytes (binary, not Markdown)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NoteRejected(f"file is not valid UTF-8 (byte {exc.start})") from None
    return NoteContent(text=text, content_hash=hashlib.sha256(data).hexdigest(),
                       mtime_ns=stat.st_mtime_ns, size_bytes=len(data))
