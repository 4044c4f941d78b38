"""Reading a `rag backup` archive for ops/restore.py, trusting nothing in it.

Bounds, each checked before a byte of a member is written:
- members: at most MEMBERS_MAX headers are read; every member must be a regular file that is
  not sparse (a GNU sparse member of a few hundred bytes can stand for gigabytes of zeros), so
  links, devices, FIFOs and folders are refused wherever they are;
- the manifest: at most MANIFEST_MAX_BYTES, JSON nested at most as deep as Python's parser
  manages (deeper is refused, not a crash), and of the shape ops/backup.py writes;
- names: plain relative parts only, each member listed once, and no member below another
  (`a` and `a/b` cannot both be files);
- sizes: each member's header size must equal its manifest entry, an uploaded file may not
  exceed the upload limit of its kind (RAG_DOCUMENT_MAX_MB for documents, the note limit for
  notes: knowledge/upload_store.py), and the folder the members are unpacked into must have
  room for all of them plus FREE_RESERVE;
- contents: each member's sha256 must match its entry, or what was written is removed.
A truncated or otherwise unreadable archive is `archive_invalid`, whatever point it fails at.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import tarfile
from pathlib import Path, PurePosixPath
from typing import IO, Any

from core.config import Config
from core.errors import LocalRagError
from knowledge.upload_store import upload_limit
from ops.backup import ARCHIVE_FORMAT, DUMP, FORMAT_VERSION, HASH_BLOCK, MANIFEST

MANIFEST_MAX_BYTES = 16 << 20
# Members read at most: an upload area of a million files is far beyond one installation's.
MEMBERS_MAX = 1_000_000
# Space left free on the disk the archive is unpacked to, beyond what its members need.
FREE_RESERVE = 256 << 20
# What tarfile raises on a truncated or garbled archive while a member is read.
READ_ERRORS = (tarfile.TarError, EOFError, OSError, ValueError)


class RestoreRefused(LocalRagError):
    code = "restore_refused"


class ArchiveInvalid(LocalRagError):
    code = "archive_invalid"


def archive_members(tar: tarfile.TarFile, *, path: Path,
                    limit: int = MEMBERS_MAX) -> dict[str, tarfile.TarInfo]:
    """The archive's members by name, read header by header; refused past `limit`, so a
    hostile tar of millions of empty members cannot fill the memory with their headers, and
    refused at the first member that is not a plain regular file."""
    members: dict[str, tarfile.TarInfo] = {}
    try:
        while (member := tar.next()) is not None:
            if len(members) >= limit:
                raise ArchiveInvalid(f"{path} holds more than {limit:,} members; a local-rag "
                                     "backup holds one per uploaded file plus two")
            _member_kind_check(member, path=path)
            if member.name in members:
                raise ArchiveInvalid(f"{path} holds {member.name} twice; a local-rag backup "
                                     "holds each file once")
            members[member.name] = member
    except READ_ERRORS as exc:
        raise ArchiveInvalid(f"{path} is damaged: its members cannot be read ({exc})") from exc
    return members


def _member_kind_check(member: tarfile.TarInfo, *, path: Path) -> None:
    if member.issparse():
        raise ArchiveInvalid(f"{path}: {member.name} is a sparse member (it stands for "
                             f"{member.size:,} bytes); a local-rag backup holds none")
    if not member.isreg():
        kind = ("a link" if member.issym() or member.islnk() else "a folder" if member.isdir()
                else "a device or FIFO")
        raise ArchiveInvalid(f"{path}: {member.name} is {kind}; a local-rag backup holds "
                             "regular files only")


def manifest_read(tar: tarfile.TarFile, members: dict[str, tarfile.TarInfo], *,
                  path: Path) -> dict[str, Any]:
    """The manifest, checked for its format, version and shape."""
    info = members.get(MANIFEST)
    if info is None or info.size > MANIFEST_MAX_BYTES:
        raise ArchiveInvalid(f"{path} is not a local-rag backup: it has no {MANIFEST}")
    try:
        handle = tar.extractfile(info)
        assert handle is not None  # a regular file
        data = handle.read()
    except READ_ERRORS as exc:
        raise ArchiveInvalid(f"{path} is damaged: its {MANIFEST} cannot be read ({exc})") from exc
    try:
        manifest = json.loads(data)
    except RecursionError as exc:
        raise ArchiveInvalid(f"{path}: {MANIFEST} nests deeper than any local-rag manifest"
                             ) from exc
    except ValueError as exc:
        raise ArchiveInvalid(f"{path}: {MANIFEST} is not JSON ({exc})") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != ARCHIVE_FORMAT:
        raise ArchiveInvalid(f"{path} is not a local-rag backup (its {MANIFEST} is of another "
                             "format)")
    version = manifest.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise RestoreRefused(
            f"{path} is a backup of format {version}, written by local-rag "
            f"{manifest.get('local_rag_version')}; this local-rag reads format {FORMAT_VERSION}. "
            "Restore it with that version or a newer one.")
    try:
        _manifest_shape_check(manifest)
    except (KeyError, TypeError, ValueError, AttributeError, RecursionError) as exc:
        raise ArchiveInvalid(f"{path}: {MANIFEST} is incomplete ({exc!r})"[:1000]) from exc
    return manifest


def _manifest_shape_check(manifest: dict[str, Any]) -> None:
    _entry_check(manifest["database"])
    if manifest["database"]["member"] != DUMP:
        raise ValueError(f"the database member must be {DUMP}")
    for table, rows in manifest["counts"].items():
        if not isinstance(table, str) or not isinstance(rows, int):
            raise ValueError("counts must map table names to numbers")
    for key in ("indexes", "constraints", "triggers"):
        int(manifest["database"]["objects"][key])
    for area in manifest["uploads"]["sources"]:
        _plain_name(area["dir"])
        str(area["path"])
    names = {DUMP, MANIFEST}
    for entry in manifest["uploads"]["files"]:
        _entry_check(entry)
        parts = PurePosixPath(entry["member"]).parts
        if parts[0] != "uploads" or len(parts) < 3:
            raise ValueError(f"{entry['member']!r} is not under uploads/<folder>/")
        if entry["member"] in names:
            raise ValueError(f"{entry['member']!r} is listed twice")
        names.add(entry["member"])
    for name in names:
        for parent in PurePosixPath(name).parents:
            if str(parent) in names:
                raise ValueError(f"{name!r} lies below {str(parent)!r}, which is a file too")


def _entry_check(entry: dict[str, Any]) -> None:
    name = entry["member"]
    if not isinstance(name, str) or not isinstance(entry["sha256"], str) or not re.fullmatch(
            r"[0-9a-f]{64}", entry["sha256"]):
        raise ValueError(f"member entry {entry!r} lacks a name or a sha256")
    if not isinstance(entry["bytes"], int) or entry["bytes"] < 0:
        raise ValueError(f"member entry {name!r} lacks its size")
    if name.startswith("/"):
        raise ValueError(f"member {name!r} is an absolute path")
    for part in PurePosixPath(name).parts:
        _plain_name(part)


def _plain_name(part: str) -> None:
    if not isinstance(part, str) or part in ("", ".", "..") or "/" in part or "\x00" in part:
        raise ValueError(f"{part!r} is not a plain file or folder name")


def members_bound_check(manifest: dict[str, Any], members: dict[str, tarfile.TarInfo], *,
                        config: Config, work: Path) -> None:
    """Before anything is unpacked: every listed member present with its declared size, each
    uploaded file within its upload limit, and room for all of them on `work`'s disk."""
    entries = [manifest["database"], *manifest["uploads"]["files"]]
    for entry in entries:
        name = entry["member"]
        info = members.get(name)
        if info is None:
            raise ArchiveInvalid(f"the archive lacks {name}, which its manifest lists")
        if info.size != entry["bytes"]:
            raise ArchiveInvalid(f"{name} holds {info.size:,} bytes, its manifest says "
                                 f"{entry['bytes']:,}")
        if name != DUMP and info.size > (limit := upload_limit(name, config=config)):
            raise ArchiveInvalid(f"{name} holds {info.size:,} bytes, more than the "
                                 f"{limit:,}-byte limit of an upload of its kind "
                                 "(RAG_DOCUMENT_MAX_MB)")
    needed = sum(entry["bytes"] for entry in entries) + FREE_RESERVE
    free = shutil.disk_usage(work).free
    if needed > free:
        raise RestoreRefused(
            f"the archive's members need {needed:,} bytes in {work} (with a "
            f"{FREE_RESERVE >> 20} MiB reserve) and its disk has {free:,} free; free space or "
            "move the project", details={"needed_bytes": needed, "free_bytes": free})


def member_extract(tar: tarfile.TarFile, members: dict[str, tarfile.TarInfo],
                   entry: dict[str, Any], *, target: Path) -> None:
    """Copy one member to `target`, refusing it unless its sha256 is the manifest's (its size
    was checked by members_bound_check)."""
    name = entry["member"]
    info = members[name]
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        source = tar.extractfile(info)
        assert source is not None  # a regular file
        digest = _copy_hashed(source, target, size=info.size)
    except READ_ERRORS as exc:
        target.unlink(missing_ok=True)
        if isinstance(exc, OSError) and not isinstance(exc, tarfile.TarError) and exc.errno:
            raise  # the disk being written, not the archive being read
        raise ArchiveInvalid(f"the archive is damaged: {name} cannot be read ({exc})") from exc
    if digest != entry["sha256"]:
        target.unlink()
        raise ArchiveInvalid(f"{name} does not match its checksum in the manifest: the archive "
                             "is damaged or was changed after it was written")


def _copy_hashed(source: IO[bytes], target: Path, *, size: int) -> str:
    """Copy at most `size` bytes (the header's, checked against the manifest), hashing them."""
    digest = hashlib.sha256()
    left = size
    with open(target, "xb") as out:
        target.chmod(0o600)
        while left > 0 and (block := source.read(min(HASH_BLOCK, left))):
            digest.update(block)
            out.write(block)
            left -= len(block)
    if left:
        raise EOFError(f"{left:,} bytes short")
    return digest.hexdigest()
