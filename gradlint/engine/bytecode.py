"""Has this interpreter's CPython already compiled a file? Its ``.pyc`` says so.

A file no rule can fire in still needs a syntax check (GL000), and CPython's compiler is
the cheap one: yet on an installed package it is most of what a run costs (4.6 s of a 34 s
run over torch's 2,300 files). An import already compiled those files and left the proof
in ``__pycache__``: a ``.pyc`` of this interpreter's version (its magic number) whose
header matches the source as importlib itself checks it, by modification time and size,
or by a hash of the bytes for hash-based ``.pyc`` files. Such a file compiles. Anything
else (no ``.pyc``, another Python, a stale or short header, an unreadable file) says
nothing, and the compiler runs.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

_HEADER = 16  # magic, flags, then (mtime, size) or an 8-byte source hash


def compiled_before(path: Path, data: bytes) -> bool:
    """Does a ``.pyc`` of this interpreter prove that ``data``, the bytes of ``path``, compile?"""
    if path.suffix != ".py":
        return False
    try:
        stat = os.stat(path)
    except (OSError, ValueError):
        return False
    if stat.st_size != len(data):
        return False  # the file changed since it was read
    for optimization in ("", 1, 2):
        try:
            cached = importlib.util.cache_from_source(str(path), optimization=optimization)
            with open(cached, "rb") as handle:
                header = handle.read(_HEADER)
        except (OSError, ValueError, NotImplementedError):
            continue
        if _matches(header, stat, data):
            return True
    return False


def _matches(header: bytes, stat: os.stat_result, data: bytes) -> bool:
    if len(header) < _HEADER or header[:4] != importlib.util.MAGIC_NUMBER:
        return False
    flags = int.from_bytes(header[4:8], "little")
    if flags & ~0b11:
        return False  # flags this reading does not know
    if flags & 0b1:  # hash-based (PEP 552)
        return header[8:16] == importlib.util.source_hash(data)
    mtime = int.from_bytes(header[8:12], "little")
    size = int.from_bytes(header[12:16], "little")
    return mtime == int(stat.st_mtime) & 0xFFFFFFFF and size == stat.st_size & 0xFFFFFFFF
