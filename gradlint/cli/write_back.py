"""Writing a fixed file back: only the fixed text changes, never how the file is stored.

The file keeps its encoding (a PEP 263 coding declaration, a UTF-8 byte order mark), its
line endings (text a fix inserts gets the file's own), its permissions, and its place
(a symbolic link stays a link; its target is written). The new content goes to a
temporary file in the same directory, flushed to disk, then renamed over the old one:
a crash at any point leaves either the old file or the new one, never a mix. A file that
changed since gradlint read it is left alone.
"""

from __future__ import annotations

import codecs
import io
import os
import stat
import tempfile
import tokenize
from pathlib import Path


class WriteBackError(Exception):
    """The fixed text was not written; the file is as it was."""


def storage_of(data: bytes) -> tuple[str, bool, str | None]:
    """(encoding, has a UTF-8 BOM, the line ending used throughout or None when mixed/none)."""
    bom = data.startswith(codecs.BOM_UTF8)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:
        encoding = "utf-8"
    if encoding == "utf-8-sig":
        encoding = "utf-8"
    crlf = data.count(b"\r\n")
    lf = data.count(b"\n") - crlf
    newline = "\r\n" if crlf and not lf else ("\n" if lf and not crlf else None)
    return encoding, bom, newline


def _same_line_endings(text: str, newline: str | None) -> str:
    if newline != "\r\n":
        return text
    # a fix may insert bare "\n": give it the file's own line ending
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


def encode_like(fixed: str, original: bytes) -> bytes:
    encoding, bom, newline = storage_of(original)
    try:
        data = _same_line_endings(fixed, newline).encode(encoding)
    except UnicodeEncodeError as error:
        raise WriteBackError(f"the fixed text cannot be written in the file's encoding "
                             f"({encoding}): {error.reason}") from None
    return (codecs.BOM_UTF8 + data) if bom else data


def write_fixed(path: Path, fixed: str, original_text: str, decode) -> None:
    """Replace ``path``'s content by ``fixed``, stored as the file is stored.

    ``original_text`` is the text gradlint read and fixed; ``decode`` turns the file's
    bytes into text the same way (the file is left alone if it changed since)."""
    target = Path(os.path.realpath(path))
    try:
        original = target.read_bytes()
        mode = stat.S_IMODE(target.stat().st_mode)
        owner = target.stat()
    except OSError as error:
        raise WriteBackError(f"cannot read the file again: {error.strerror}") from None
    try:
        current = decode(original)
    except Exception:  # noqa: BLE001  (it decoded when it was read: it changed since)
        current = None
    if current != original_text:
        raise WriteBackError("the file changed since it was read; not written")
    data = encode_like(fixed, original)
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".gradlint-tmp",
                                         dir=target.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, mode)
        try:
            os.chown(temporary, owner.st_uid, owner.st_gid)
        except (OSError, AttributeError):
            pass  # not ours to give away: the new file is the writer's (as an editor does)
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
