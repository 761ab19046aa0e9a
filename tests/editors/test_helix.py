"""Helix is not packaged for this machine's Debian, so its README snippet is checked for
shape: valid TOML that starts the same safe server command as the other editors, and the
line next to it that says how to run gradcheck."""

from __future__ import annotations

import tomllib

from readme_config import snippet, trust_line


def test_the_helix_snippet_starts_gradlint_lsp_for_python():
    config = tomllib.loads(snippet("Helix", "toml"))
    server = config["language-server"]["gradlint"]
    assert [server["command"], *server["args"]] == ["python3", "-P", "-m", "gradlint", "lsp"]
    [python] = config["language"]
    assert python["name"] == "python" and "gradlint" in python["language-servers"]
    assert trust_line("Helix") == "gradlint trust"
