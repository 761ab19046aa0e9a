"""A current ``.pyc`` of this interpreter spares the syntax check; anything else does not."""

from __future__ import annotations

import importlib.util
import os
import py_compile
from pathlib import Path

import pytest

from gradlint.engine import prefilter
from gradlint.engine.bytecode import compiled_before
from gradlint.engine.files import lint_file
from gradlint.engine.options import LintOptions

SOURCE = b"import torch\n\ndef f(x):\n    return x + 1\n"


def _write(tmp_path: Path, data: bytes = SOURCE) -> Path:
    path = tmp_path / "mod.py"
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("mode", [py_compile.PycInvalidationMode.TIMESTAMP,
                                  py_compile.PycInvalidationMode.CHECKED_HASH,
                                  py_compile.PycInvalidationMode.UNCHECKED_HASH])
def test_a_current_pyc_proves_the_file_compiles(tmp_path, mode):
    path = _write(tmp_path)
    py_compile.compile(str(path), invalidation_mode=mode, doraise=True)
    assert compiled_before(path, SOURCE)


def test_no_pyc_proves_nothing(tmp_path):
    assert not compiled_before(_write(tmp_path), SOURCE)


def test_a_stale_pyc_proves_nothing(tmp_path):
    path = _write(tmp_path)
    py_compile.compile(str(path), doraise=True)
    changed = SOURCE.replace(b"+ 1", b"+ 2")  # same size
    path.write_bytes(changed)
    stat = path.stat()
    os.utime(path, (stat.st_atime, stat.st_mtime + 5))
    assert not compiled_before(path, changed)
    hashed = _write(tmp_path)
    py_compile.compile(str(hashed), invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH,
                       doraise=True)
    assert not compiled_before(hashed, changed)  # the hash of other bytes


def test_a_pyc_of_another_python_proves_nothing(tmp_path):
    path = _write(tmp_path)
    py_compile.compile(str(path), doraise=True)
    cached = Path(importlib.util.cache_from_source(str(path)))
    data = bytearray(cached.read_bytes())
    data[0:2] = (int.from_bytes(data[0:2], "little") - 1).to_bytes(2, "little")
    cached.write_bytes(bytes(data))
    assert not compiled_before(path, SOURCE)
    cached.write_bytes(b"\x00")  # truncated
    assert not compiled_before(path, SOURCE)


def test_lint_file_skips_the_compile_only_with_a_current_pyc(tmp_path, monkeypatch):
    calls = []
    real = prefilter.compiles
    monkeypatch.setattr(prefilter, "compiles", lambda text: calls.append(text) or real(text))
    path = _write(tmp_path)
    options = LintOptions()
    assert lint_file(path, "mod.py", options, data=SOURCE).findings == []
    assert len(calls) == 1
    py_compile.compile(str(path), doraise=True)
    assert lint_file(path, "mod.py", options, data=SOURCE).findings == []
    assert len(calls) == 1  # the .pyc answered
