"""Folders the user trusts gradlint to run code in, recorded in the user's own configuration
(``gradlint trust [PATH]`` / ``gradlint untrust [PATH]``), never in a workspace.

Running gradcheck imports and executes a project's code. VS Code asks the user whether a
workspace is trusted and tells the server; Neovim, Emacs, Helix and other editors have no
such notion, so the server also honours this list: a folder is trusted when it, or a folder
above it, is listed. A workspace cannot trust itself: the list lives in the user's
configuration directory (chosen by the CLI and the server from the user's environment, not
from anything in a workspace), and a list that another user could write is not honoured.

The file is JSON: ``{"version": 1, "trusted": [{"path": "/abs/real/path", "added": "..."}]}``.
No printing and no environment here.
"""

from __future__ import annotations

import json
import os
import secrets
import stat
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Mapping

FILE_NAME = "trusted-folders.json"
FORMAT = 1
MAX_BYTES = 1024 * 1024


class TrustStoreError(Exception):
    """The list cannot be read or written, or is not to be honoured (one-line message)."""


def default_location(environ: Mapping[str, str], home: Path) -> Path:
    """Where the list lives for a user: ``$XDG_CONFIG_HOME/gradlint`` (default
    ``~/.config/gradlint``), ``%APPDATA%\\gradlint`` on Windows; ``$GRADLINT_CONFIG_DIR``
    overrides both."""
    if environ.get("GRADLINT_CONFIG_DIR"):
        return Path(environ["GRADLINT_CONFIG_DIR"]) / FILE_NAME
    if sys.platform == "win32" and environ.get("APPDATA"):
        return Path(environ["APPDATA"]) / "gradlint" / FILE_NAME
    base = Path(environ["XDG_CONFIG_HOME"]) if environ.get("XDG_CONFIG_HOME") else home / ".config"
    return base / "gradlint" / FILE_NAME


def canonical(folder: Path) -> Path:
    """The absolute, symlink-free form a folder is recorded and compared in."""
    return Path(os.path.realpath(os.path.abspath(folder)))


@dataclass
class TrustStore:
    path: Path
    folders: list[Path] = field(default_factory=list)
    added: dict[Path, str] = field(default_factory=dict)

    def trusting(self, folder: Path) -> Path | None:
        """The listed folder that trusts ``folder`` (itself or one above it), or None."""
        real = canonical(folder)
        for trusted in self.folders:
            if real == trusted or real.is_relative_to(trusted):
                return trusted
        return None

    def add(self, folder: Path) -> bool:
        """Trust ``folder``; False when it was listed already."""
        real = canonical(folder)
        if real in self.folders:
            return False
        self.folders.append(real)
        self.added[real] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        return True

    def remove(self, folder: Path) -> bool:
        """Stop trusting ``folder`` itself; False when it was not listed."""
        real = canonical(folder)
        if real not in self.folders:
            return False
        self.folders.remove(real)
        self.added.pop(real, None)
        return True


def _check_owner(path: Path, status: os.stat_result) -> None:
    """A list that another user could change (or that belongs to another user) would let
    them make this user run code: it is not honoured."""
    if sys.platform == "win32" or not hasattr(os, "getuid"):
        return
    if status.st_uid != os.getuid():
        raise TrustStoreError(f"{path} belongs to another user: it is not honoured")
    if status.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise TrustStoreError(f"{path} can be written by other users: it is not honoured "
                              f"(`chmod go-w {path}`)")


def load(path: Path) -> TrustStore:
    """The list in ``path`` (an empty one when the file does not exist)."""
    store = TrustStore(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return store
    except OSError as error:
        raise TrustStoreError(f"{path}: cannot read: {error.strerror or error}") from None
    with os.fdopen(fd, "rb") as handle:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode) or status.st_size > MAX_BYTES:
            raise TrustStoreError(f"{path}: not a regular file of at most {MAX_BYTES} bytes")
        _check_owner(path, status)
        data = handle.read(MAX_BYTES + 1)
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise TrustStoreError(f"{path}: invalid JSON ({error}); fix or delete it") from None
    entries = document.get("trusted") if isinstance(document, dict) else None
    if not isinstance(entries, list) or document.get("version") != FORMAT:
        raise TrustStoreError(f"{path}: expected {{\"version\": {FORMAT}, \"trusted\": [...]}}; fix or delete it")
    for entry in entries:
        folder = entry.get("path") if isinstance(entry, dict) else None
        if not isinstance(folder, str) or not os.path.isabs(folder):
            raise TrustStoreError(f"{path}: an entry is not an absolute path: {entry!r}")
        real = Path(folder)
        if real not in store.folders:
            store.folders.append(real)
            store.added[real] = str(entry.get("added", ""))
    return store


def save(store: TrustStore) -> None:
    """Write the list atomically, readable and writable by the user only."""
    document = {"version": FORMAT,
                "trusted": [{"path": str(folder), "added": store.added.get(folder, "")}
                            for folder in store.folders]}
    data = (json.dumps(document, indent=2) + "\n").encode("utf-8")
    directory = store.path.parent
    temporary = directory / f".{store.path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
        try:
            with os.fdopen(handle, "wb") as stream:
                stream.write(data)
            os.replace(temporary, store.path)
        except BaseException:
            try:
                os.unlink(temporary)
            except OSError:
                pass
            raise
    except OSError as error:
        raise TrustStoreError(f"{store.path}: cannot write: {error.strerror or error}") from None


class TrustedFolders:
    """The list as the server reads it: again whenever the file changed (a ``gradlint trust``
    in a terminal applies to the running server at once)."""

    def __init__(self, path: Path):
        self.path = path
        self._seen: tuple | None = None
        self._store = TrustStore(path)
        self.problem: str | None = None  # why the list is not honoured, when it is not

    def _refresh(self) -> None:
        try:
            status = os.stat(self.path)
            seen: tuple | None = (status.st_mtime_ns, status.st_size, status.st_ino, status.st_mode,
                                  status.st_uid)
        except OSError:
            seen = None
        if seen == self._seen and self._seen is not None:
            return
        self._seen = seen
        try:
            self._store = load(self.path)
            self.problem = None
        except TrustStoreError as error:
            self._store = TrustStore(self.path)
            self.problem = str(error)

    def trusting(self, folder: Path) -> Path | None:
        self._refresh()
        return self._store.trusting(folder)
