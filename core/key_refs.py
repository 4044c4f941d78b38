"""Keys given by reference: instead of the key itself in `.env`, the name of an environment
variable that holds it (`LLM_API_KEY_ENV`) or a file that holds it (`LLM_API_KEY_FILE`).

The reference is resolved as the configuration loads (core/config.py), into the same field the
key itself fills, so every client reads one value whichever way it was given. At most one of the
three may be set: with two, which one is in use would be a guess. A variable that is not set
leaves the key unset (the provider's own check then says so); a key file that cannot be trusted
(missing, not a plain file, readable or writable by other users, too large, more than one line)
fails the load, naming the setting. No message ever quotes a key or a line of the file.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path

from core.config_parse import ConfigError, HeaderText, VariableName

# A key, a JWT or a cloud token fits many times over; a larger file is not a key file.
KEY_FILE_MAX_BYTES = 16 * 1024
# Group or other write, other read: anyone but the owner (and the owner's group, reading) could
# read or swap the key.
_UNSAFE_MODE_BITS = stat.S_IWGRP | stat.S_IROTH | stat.S_IWOTH


@dataclass(frozen=True)
class KeyReference:
    """A key setting and the two settings that may name where it is instead."""

    key: str  # e.g. LLM_API_KEY
    variable: str  # e.g. LLM_API_KEY_ENV
    file: str  # e.g. LLM_API_KEY_FILE


KEY_REFERENCES = (KeyReference("LLM_API_KEY", "LLM_API_KEY_ENV", "LLM_API_KEY_FILE"),)


def key_references_resolve(raw: MutableMapping[str, str], sources: MutableMapping[str, str], *,
                           environ: Mapping[str, str], base: Path) -> None:
    """Fill each key of `raw` from its reference, in place; its source becomes the reference's
    setting (`rag config` then shows `LLM_API_KEY = <set> (LLM_API_KEY_FILE)`)."""
    for reference in KEY_REFERENCES:
        given = [name for name in (reference.key, reference.variable, reference.file)
                 if raw.get(name, "").strip()]
        if len(given) > 1:
            raise ConfigError(f"{' and '.join(given)} are set together; set only one: the key "
                              "itself, the variable that holds it, or the file that holds it",
                              variable=given[-1])
        if raw.get(reference.variable, "").strip():
            key = key_variable_read(setting=reference.variable,
                                    variable=raw[reference.variable], environ=environ)
            source = reference.variable
        elif raw.get(reference.file, "").strip():
            key = key_file_read(key_file_path(raw[reference.file], base=base),
                                setting=reference.file)
            source = reference.file
        else:
            continue
        if key:
            raw[reference.key], sources[reference.key] = key, source


def key_file_path(text: str, *, base: Path) -> Path:
    """The key file a setting names: relative to `base` (the project root) unless absolute."""
    path = Path(text.strip()).expanduser()
    return path if path.is_absolute() else base / path


def key_variable_read(*, setting: str, variable: str, environ: Mapping[str, str]) -> str:
    """The key held by environment variable `variable` ("" when it is unset or empty)."""
    name = VariableName().parse(setting, variable, base=Path())
    key = environ.get(name, "").strip()
    _header_check(key, setting=setting, where=f"the variable {name}")
    return key


def key_file_read(path: Path, *, setting: str) -> str:
    """The key in the file at `path`: one line, the file a plain one of at most
    KEY_FILE_MAX_BYTES that no one but its owner may write and other users may not read."""
    try:
        # Non-blocking: a FIFO put in the file's place must not hang the start-up.
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise ConfigError(f"{setting}: {path} does not exist", variable=setting) from None
    except OSError as exc:
        raise ConfigError(f"{setting}: {path} cannot be opened ({exc.strerror})",
                          variable=setting) from None
    try:
        # The opened file itself is checked, not the path again: nothing can be swapped between.
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise ConfigError(f"{setting}: {path} is not a plain file", variable=setting)
        mode = stat.S_IMODE(status.st_mode)
        if mode & _UNSAFE_MODE_BITS:
            raise ConfigError(f"{setting}: {path} may be read or changed by other users (mode "
                              f"{mode:04o}); make it private with `chmod 600 {path}`",
                              variable=setting)
        if status.st_size > KEY_FILE_MAX_BYTES:
            raise _too_large(path, setting)
        data = os.read(descriptor, KEY_FILE_MAX_BYTES + 1)
    finally:
        os.close(descriptor)
    if len(data) > KEY_FILE_MAX_BYTES:
        raise _too_large(path, setting)
    try:
        text = data.decode("ascii").strip()
    except UnicodeDecodeError:
        raise ConfigError(f"{setting}: {path} holds characters an HTTP header cannot carry "
                          "(non-ASCII)", variable=setting) from None
    if not text:
        raise ConfigError(f"{setting}: {path} is empty", variable=setting)
    if "\n" in text or "\r" in text:
        raise ConfigError(f"{setting}: {path} holds more than one line; it must hold the key "
                          "alone", variable=setting)
    _header_check(text, setting=setting, where=str(path))
    return text


def _header_check(key: str, *, setting: str, where: str) -> None:
    try:
        HeaderText().parse(setting, key, base=Path())
    except ConfigError:
        raise ConfigError(f"{setting}: {where} holds characters an HTTP header cannot carry "
                          "(control characters or non-ASCII); check how the key was copied",
                          variable=setting) from None


def _too_large(path: Path, setting: str) -> ConfigError:
    return ConfigError(f"{setting}: {path} is larger than {KEY_FILE_MAX_BYTES} bytes; it must "
                       "hold the key alone", variable=setting)
