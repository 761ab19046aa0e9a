"""The editor configurations printed in README.md, as the editor tests use them: the tests
configure Neovim and Emacs with exactly these snippets, so the README shows what is tested."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def snippet(editor: str, language: str) -> str:
    """The first ```language block after the README's **Editor** paragraph."""
    text = README.read_text(encoding="utf-8")
    start = text.index(f"**{editor}**")
    match = re.compile(rf"```{language}\n(.*?)```", re.S).search(text, start)
    assert match, f"README.md has no ```{language} block after **{editor}**"
    return match.group(1)


def python3_on_path(tmp_path: Path) -> dict[str, str]:
    """An environment whose `python3` (what the snippets run) is this interpreter, which has
    gradlint: a wrapper, since a symlink to a venv's python would lose the venv."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    wrapper = bin_dir / "python3"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    wrapper.chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}


def trust_line(editor: str) -> str:
    """The command in the README's one line under an editor's snippet that says how to run
    gradcheck there (`**Run gradcheck** from <editor>: `COMMAND` ...`)."""
    text = README.read_text(encoding="utf-8")
    start = text.index(f"**{editor}**")
    match = re.compile(rf"\*\*Run gradcheck\*\* from {editor}: `([^`]+)`").search(text, start)
    assert match, f"README.md says nothing after the {editor} snippet on how to run gradcheck"
    return match.group(1)
