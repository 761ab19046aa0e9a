"""Reading a file that may not be a file: a FIFO named `*.py` (opening it for reading
blocks until a writer comes), a symlink to /dev/zero (endless), or something huge.
Everything gradlint reads from disk (sources, configuration, test files searched for
inputs) is checked here *before* it is read."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from ..analysis.source import SourceDecodeError

MAX_FILE_BYTES = 8 * 1024 * 1024
NOTEBOOK_SUFFIX = ".ipynb"
MAX_NOTEBOOK_BYTES = 256 * 2 ** 20  # outputs (images) make notebooks big; only code is analysed


def is_notebook(name: str) -> bool:
    return name.lower().endswith(NOTEBOOK_SUFFIX)


class NotARegularFile(OSError):
    """A path that names a FIFO, a device, a socket or a directory: reading it could block
    for ever (a FIFO) or never end (/dev/zero), so it is not read."""

    def __init__(self, path: Path, mode: int):
        kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a character device" if stat.S_ISCHR(mode)
                else "a block device" if stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode)
                else "a directory" if stat.S_ISDIR(mode) else "an unusual file")
        super().__init__(errno.EINVAL, f"not a regular file ({kind})", str(path))


def read_bytes(path: Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file (through symlinks), checked before reading: never
    blocks on a FIFO, never reads a device, never reads more than ``limit`` bytes.
    Raises OSError (NotARegularFile for a FIFO, device, ...) or SourceDecodeError (too large)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as handle:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise NotARegularFile(path, status.st_mode)
        if status.st_size > limit:
            raise _too_large(status.st_size, limit)
        data = handle.read(limit + 1)
    if len(data) > limit:  # it grew while being read
        raise _too_large(len(data), limit)
    return data


def _too_large(size: int, limit: int) -> SourceDecodeError:
    return SourceDecodeError(f"file is too large to analyse ({size // 1024 // 1024} MiB; "
                             f"the limit is {limit // 1024 // 1024} MiB)", 1, 0)
