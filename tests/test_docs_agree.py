"""What several parts of the project state must agree: the README's `make run` with the
Makefile and the real output, and one default run timeout in the CLI, the server, the VS Code
extension and the READMEs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import gradlint
from gradlint.cli.main import build_parser
from gradlint.server.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
MANIFEST = json.loads((ROOT / "vscode-extension" / "package.json").read_text(encoding="utf-8"))


def test_make_run_echoes_what_it_runs_and_the_readme_shows_its_output(cli):
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    [command] = re.findall(r"^RUN := (.+)$", makefile, re.M)
    recipe = makefile[makefile.index("\nrun: "):].split("\n\n")[0]
    assert "@echo '$$ $(RUN)'" in recipe and "$(VENV)/bin/$(RUN)" in recipe
    block = README[README.index("`make run` prints:"):]
    block = block[block.index("```console\n") + len("```console\n"):block.index("\n```\n")]
    shown_command, _, shown_output = block.partition("\n")
    assert shown_command == f"$ {command}"
    args = command.split()
    assert args[0] == "gradlint"
    result = cli(*args[1:], cwd=ROOT)
    assert result.returncode == 1, result.stderr
    assert result.stdout.rstrip("\n") == shown_output, "README.md's `make run` output is out of date"


def test_one_default_run_timeout_everywhere():
    settings_ts = (ROOT / "vscode-extension" / "src" / "settings.ts").read_text(encoding="utf-8")
    extension_readme = (ROOT / "vscode-extension" / "README.md").read_text(encoding="utf-8")
    defaults = {
        "gradlint run --timeout": build_parser().parse_args(["run"]).timeout,
        "server runTimeout": Settings().run_timeout,
        "package.json gradlint.run.timeout": MANIFEST["contributes"]["configuration"]["properties"]
        ["gradlint.run.timeout"]["default"],
        "settings.ts DEFAULTS.runTimeout": float(re.search(r"runTimeout: (\d+),", settings_ts).group(1)),
        "README run timeout": float(re.search(r"with a timeout\s+\((\d+) s", README).group(1)),
        "README runTimeout": float(re.search(r"`runTimeout` \(seconds,\s+default (\d+)", README).group(1)),
        "vscode-extension/README.md": float(re.search(r"\| `gradlint.run.timeout` \| `(\d+)` \|",
                                                      extension_readme).group(1)),
    }
    assert set(defaults.values()) == {60.0}, defaults


def test_the_extension_and_the_package_have_one_version():
    assert MANIFEST["version"] == gradlint.__version__
