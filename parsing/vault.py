"""The vault on disk: canonical paths, which files are notes, and reading them safely.

The scan and the read are separated in time, so a read must not trust the path alone: it opens
without following a final symlink, checks that the opened file is the very file the scan saw
(device and inode) and that it is still inside the vault, and reads at most the size limit
plus one byte.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path

from core.errors import LocalRagError
from parsing.formats import SUFFIXES, is_document
from parsing.sidecar import (
    SIDECAR_MAX_BYTES,
    Sidecar,
    is_sidecar,
    sidecar_name,
    sidecar_parse,
)

DEFAULT_MAX_FILE_BYTES = 5 * 1024 * 1024
# PDF, DOCX and TXT files (RAG_DOCUMENT_MAX_MB); a scanned report runs to tens of megabytes.
DEFAULT_MAX_DOCUMENT_BYTES = 100 * 1024 * 1024
# The index keeps (vault_path, relative_path) in a btree, whose rows must stay under ~2.7 KB.
MAX_PATH_BYTES = 2000
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


class VaultNotFound(LocalRagError):
    code = "vault_not_found"


@dataclass(frozen=True)
class NoteFile:
    """A candidate note: where it is, how to name it in the index, and which file it was."""

    relative_path: str  # POSIX, relative to the canonical vault root
    file_path: Path  # resolved absolute path
    device: int = 0  # st_dev and st_ino of the file the scan saw (0: not checked)
    inode: int = 0
    mtime_ns: int = 0  # its modification time and size as the scan saw them (0, -1: unknown)
    size_bytes: int = -1
    # Its sidecar `<name>.meta.yaml` (parsing/sidecar.py) as the scan saw it; -1: none.
    sidecar_mtime_ns: int = 0
    sidecar_size: int = -1


@dataclass(frozen=True)
class NoteContent:
    text: str  # the decoded note; "" for a document of another format
    content_hash: str  # SHA-256 hex of the file's bytes
    mtime_ns: int
    size_bytes: int
    data: bytes | None = None  # the file's bytes, for a document of another format (PDF, ...)
    sidecar: Sidecar | None = None  # its sidecar's fields, when it has one


@dataclass
class VaultScan:
    """What a scan found: the notes, warnings, and the folders it could not read (nothing
    under those may be deleted from the index in this run)."""

    notes: list[NoteFile] = field(default_factory=list)
    warnings: list[tuple[str, str]] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)

    def covers(self, relative_path: str) -> bool:
        """True when `relative_path` lies under a folder the scan could not read."""
        return any(folder == "" or relative_path == folder
                   or relative_path.startswith(folder + "/") for folder in self.unreadable)


class NoteRejected(Exception):
    """A file that cannot be indexed; the message names the reason."""


def vault_resolve(path: Path | str) -> Path:
    """Canonical vault root: `samples/acme-vault`, `./samples/acme-vault/` and the absolute path
    are one vault."""
    try:
        resolved = Path(path).expanduser().resolve(strict=True)
    except FileNotFoundError:
        raise VaultNotFound(f"vault path does not exist: {path}",
                            details={"path": str(path)}) from None
    except (OSError, RuntimeError) as exc:  # a file in the path, no permission, a symlink loop
        reason = getattr(exc, "strerror", None) or str(exc)
        raise VaultNotFound(f"vault path is not usable: {path} ({reason})",
                            details={"path": str(path)}) from None
    if not resolved.is_dir():
        raise VaultNotFound(f"vault path is not a directory: {path}", details={"path": str(path)})
    return resolved


def path_display(path: str) -> str:
    """A path as text that any JSON or database column can hold (undecodable bytes escaped)."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def vault_scan(*, root: Path) -> VaultScan:
    """Every note (`*.md`) and document (`*.pdf`, `*.docx`, `*.txt`) under `root`, sorted by
    relative path. Hidden files and folders (.obsidian,
    .trash) are skipped, symlinks leaving the vault or entering a hidden folder are refused, names
    that are not UTF-8 or too long to index are skipped, and every folder that cannot be read is
    a warning and recorded as unreadable."""
    scan = VaultScan()

    def on_error(error: OSError) -> None:
        relative = _relative(Path(error.filename or root), root)
        scan.warnings.append((path_display(relative) or ".",
                              f"cannot read folder: {error.strerror or error}"))
        scan.unreadable.append(relative)

    # A regular file reached without following a link lies at its own canonical path when the
    # root is canonical: one lstat, no resolving (most of a re-ingest of an unchanged vault).
    canonical = os.path.realpath(root) == str(root)
    for folder, dirnames, filenames in os.walk(root, onerror=on_error, followlinks=False):
        here = Path(folder)
        prefix = _relative(here, root)
        prefix = f"{prefix}/" if prefix else ""
        kept = []
        for name in dirnames:
            if name.startswith("."):
                continue
            relative = _relative(here / name, root)
            if not _utf8(relative):
                scan.warnings.append((path_display(relative), "folder name is not valid UTF-8; "
                                      "not indexed"))
                continue
            if (here / name).is_symlink():
                scan.warnings.append((relative, "symlinked folder not followed"))
                continue
            kept.append(name)
        dirnames[:] = sorted(kept)
        sidecars = {name for name in filenames if is_sidecar(name)}
        for name in filenames:
            if name.startswith(".") or not name.lower().endswith(SUFFIXES):
                continue
            note, reason = _note_file(here / name, root, relative=prefix + name,
                                      canonical=canonical)
            if note is not None and sidecar_name(name) in sidecars:
                note = _with_sidecar(note, here / sidecar_name(name))
            if note is not None:
                scan.notes.append(note)
            elif reason is not None:
                scan.warnings.append((path_display(_relative(here / name, root)), reason))
    scan.notes.sort(key=lambda note: note.relative_path)
    return scan


def _note_file(link: Path, root: Path, *, relative: str,
               canonical: bool) -> tuple[NoteFile | None, str | None]:
    """The NoteFile for one note or document entry at `relative` (its path under `root`), or
    (None, why not) — (None, None) to skip silently. `canonical`: `root` is its own resolved
    path and `link` was reached without following a link, so only a link needs resolving."""
    if not _utf8(relative):
        return None, "file name is not valid UTF-8; not indexed"
    if len(str(root).encode()) + len(relative.encode()) > MAX_PATH_BYTES:
        return None, f"path is longer than the {MAX_PATH_BYTES}-byte limit of the index"
    if canonical:
        try:
            facts = os.lstat(link)
        except OSError:
            return None, "broken symlink"  # gone since the folder was listed: as a dangling link
        if stat.S_ISREG(facts.st_mode):
            return NoteFile(relative_path=relative, file_path=link, device=facts.st_dev,
                            inode=facts.st_ino, mtime_ns=facts.st_mtime_ns,
                            size_bytes=facts.st_size), None
        if not stat.S_ISLNK(facts.st_mode):
            return None, None
    try:
        target = link.resolve(strict=True)
        facts = target.stat()
    except (FileNotFoundError, RuntimeError, OSError):
        return None, "broken symlink"
    if not target.is_relative_to(root):
        return None, "symlink points outside the vault; not indexed"
    if any(part.startswith(".") for part in target.relative_to(root).parts):
        return None, "symlink points into a hidden folder; not indexed"
    if not stat.S_ISREG(facts.st_mode):
        return None, None
    return NoteFile(relative_path=relative, file_path=target, device=facts.st_dev,
                    inode=facts.st_ino, mtime_ns=facts.st_mtime_ns,
                    size_bytes=facts.st_size), None


def _with_sidecar(note: NoteFile, path: Path) -> NoteFile:
    """`note` with its sidecar's time and size: a regular file, not a link (else none)."""
    try:
        facts = path.lstat()
    except OSError:
        return note
    if not stat.S_ISREG(facts.st_mode):
        return note
    return replace(note, sidecar_mtime_ns=facts.st_mtime_ns, sidecar_size=facts.st_size)


def sidecar_read(*, note: NoteFile, root: Path) -> Sidecar | None:
    """The sidecar of `note`, read as a note is (no link followed, bounded); None without one.
    A sidecar that cannot be read becomes one with only a warning."""
    if note.sidecar_size < 0:
        return None
    name = sidecar_name(note.relative_path)
    # As the scan saw it: a broken sidecar is not read again until it changes.
    seen = {"file": name, "mtime_ns": note.sidecar_mtime_ns, "size_bytes": note.sidecar_size}
    try:
        descriptor = os.open(root / name, _READ_FLAGS)
    except OSError as exc:
        return Sidecar(fields={}, tags=[], stamp=seen, warnings=[
            f"cannot read {name}: {exc.strerror or exc}; indexed without it"])
    with os.fdopen(descriptor, "rb") as handle:
        facts = os.fstat(descriptor)
        data = handle.read(SIDECAR_MAX_BYTES + 1) if stat.S_ISREG(facts.st_mode) else b""
    if len(data) > SIDECAR_MAX_BYTES:
        return Sidecar(fields={}, tags=[], stamp=seen, warnings=[
            f"{name} is larger than {SIDECAR_MAX_BYTES:,} bytes; indexed without it"])
    return sidecar_parse(data, name=name, mtime_ns=facts.st_mtime_ns)


def _relative(path: Path, root: Path) -> str:
    return "" if path == root else path.relative_to(root).as_posix()


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # os.walk hands undecodable bytes over as lone surrogates
        return False
    return True


def note_read(*, note: NoteFile, root: Path, max_bytes: int = DEFAULT_MAX_FILE_BYTES,
              max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES) -> NoteContent:
    """Read, hash and decode one note (or read and hash one document of another format);
    raises NoteRejected for a file that changed since the scan, left the vault, grew past its
    limit (`max_bytes` for notes, `max_document_bytes` for documents), or, for a note, is
    binary or is not UTF-8."""
    document = is_document(note.relative_path)
    if document:
        max_bytes = max_document_bytes
    try:
        descriptor = os.open(note.file_path, _READ_FLAGS)
    except OSError as exc:
        raise NoteRejected(f"cannot read file: {exc.strerror or exc}") from None
    with os.fdopen(descriptor, "rb") as handle:
        facts = os.fstat(descriptor)
        if not stat.S_ISREG(facts.st_mode) or (
                note.inode and (facts.st_dev, facts.st_ino) != (note.device, note.inode)):
            raise NoteRejected("file was replaced since the scan; not read")
        opened = _descriptor_path(descriptor)
        if opened is not None and not opened.is_relative_to(root):
            raise NoteRejected("file is no longer inside the vault; not read")
        try:
            data = handle.read(max_bytes + 1)
        except OSError as exc:
            raise NoteRejected(f"cannot read file: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        setting = "RAG_DOCUMENT_MAX_MB" if document else "--max-file-mb"
        raise NoteRejected(f"file is larger than the {max_bytes:,}-byte limit ({setting})")
    if document:
        return NoteContent(text="", content_hash=hashlib.sha256(data).hexdigest(),
                           mtime_ns=facts.st_mtime_ns, size_bytes=len(data), data=data)
    if b"\x00" in data:
        raise NoteRejected("file contains NUL bytes (binary, not Markdown)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NoteRejected(f"file is not valid UTF-8 (byte {exc.start})") from None
    return NoteContent(text=text, content_hash=hashlib.sha256(data).hexdigest(),
                       mtime_ns=facts.st_mtime_ns, size_bytes=len(data))


def _descriptor_path(descriptor: int) -> Path | None:
    """Where an open file really is (Linux /proc); None where the system cannot say."""
    try:
        return Path(os.readlink(f"/proc/self/fd/{descriptor}"))
    except OSError:
        return None
