"""`gradlint check --fix` changes only the fixed text: encoding, BOM, line endings,
permissions and symbolic links stay; the write is atomic."""

from __future__ import annotations

import codecs
import os
import stat

import pytest

from gradlint.analysis.source import decode_source
from gradlint.cli import write_back

SOURCE = (
    "import torch\n"
    "from torch.autograd import gradcheck\n"
    "x = torch.randn(3, requires_grad=True)\n"
    "assert gradcheck(torch.sin, (x,))\n"
)
FIXED_LINE = b"x = torch.randn(3, dtype=torch.float64, requires_grad=True)"


def _fix(cli, path):
    result = cli("check", "--fix", "--unsafe-fixes", "--no-cache", str(path), cwd=path.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    return path.read_bytes()


def test_bom_is_kept(cli, tmp_path):
    path = tmp_path / "bom.py"
    path.write_bytes(codecs.BOM_UTF8 + SOURCE.encode())
    data = _fix(cli, path)
    assert data.startswith(codecs.BOM_UTF8) and FIXED_LINE in data


def test_crlf_line_endings_are_kept(cli, tmp_path):
    path = tmp_path / "crlf.py"
    path.write_bytes(SOURCE.replace("\n", "\r\n").encode())
    data = _fix(cli, path)
    assert FIXED_LINE + b"\r\n" in data
    assert data.count(b"\n") == data.count(b"\r\n")


def test_a_coding_declaration_is_kept(cli, tmp_path):
    path = tmp_path / "latin.py"
    text = "# -*- coding: latin-1 -*-\n# Gr\xfc\xdfe\n" + SOURCE
    path.write_bytes(text.encode("latin-1"))
    data = _fix(cli, path)
    assert b"# Gr\xfc\xdfe\n" in data and FIXED_LINE in data  # still latin-1, not UTF-8


def test_permissions_and_links_are_kept(cli, tmp_path):
    real = tmp_path / "real.py"
    real.write_text(SOURCE)
    os.chmod(real, 0o751)
    link = tmp_path / "link.py"
    link.symlink_to(real)
    result = cli("check", "--fix", "--unsafe-fixes", "--no-cache", "link.py", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert link.is_symlink() and FIXED_LINE in real.read_bytes()
    assert stat.S_IMODE(real.stat().st_mode) == 0o751


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "f.py"
    path.write_text(SOURCE)

    def crash(*_args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(write_back.os, "replace", crash)
    with pytest.raises(OSError):
        write_back.write_fixed(path, SOURCE.replace("3,", "4,"), SOURCE, decode_source)
    assert path.read_text() == SOURCE
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.py"]


def test_a_file_changed_since_it_was_read_is_not_written(tmp_path):
    path = tmp_path / "f.py"
    path.write_text(SOURCE + "# edited meanwhile\n")
    with pytest.raises(write_back.WriteBackError, match="changed since"):
        write_back.write_fixed(path, SOURCE.replace("3,", "4,"), SOURCE, decode_source)
    assert path.read_text().endswith("# edited meanwhile\n")


def test_text_the_encoding_cannot_hold_is_not_written(tmp_path):
    path = tmp_path / "f.py"
    text = "# -*- coding: latin-1 -*-\n" + SOURCE
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(write_back.WriteBackError, match="encoding"):
        write_back.write_fixed(path, text + "# \u2603\n", text, decode_source)
    assert path.read_bytes() == text.encode("latin-1")
