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


# -- the lists the READMEs give, against the code ---------------------------------------------
EXTENSION_README = (ROOT / "vscode-extension" / "README.md").read_text(encoding="utf-8")
RULE_ROW = re.compile(r"^\| (GL\d{3}) \| `([\w-]+)` \| (.*) \|$", re.M)


def test_the_readmes_list_every_rule_as_the_code_names_it():
    from gradlint.rules import ALL_RULES

    rows = RULE_ROW.findall(README)
    assert [(code, name) for code, name, _ in rows] == [(rule.code, rule.name) for rule in ALL_RULES]
    # the extension's README has the same table (without the names)
    extension_rows = re.findall(r"^  \| (GL\d{3}) \| (.*) \|$", EXTENSION_README, re.M)
    assert extension_rows == [(code, text) for code, _, text in rows]


def test_the_readme_lists_every_output_format():
    parser = build_parser()
    check = next(action for action in parser._subparsers._group_actions[0].choices["check"]._actions
                 if action.dest == "format")
    [shown] = re.findall(r"^\$ gradlint check --format (\S+\|\S+)", README, re.M)
    assert shown.split("|") == list(check.choices)
    ci = README[README.index("## CI\n"):]
    ci = ci[:ci.index("\n## ")]
    shown_in_ci = {f for f in check.choices if re.search(rf"--format {f}(?![\w-])", ci)}
    assert shown_in_ci == set(check.choices) - {"text", "json"}


def test_the_readme_lists_every_configuration_key():
    from gradlint.engine.config import KEYS

    section = README[README.index("## Configuration\n"):]
    block = section[section.index("```toml\n"):section.index("\n```\n")]
    keys = re.findall(r"^([\w-]+) = ", block, re.M)
    assert keys == list(KEYS)


def test_the_extension_readme_lists_every_setting_of_its_manifest():
    properties = MANIFEST["contributes"]["configuration"]["properties"]
    listed = re.findall(r"^\| `(gradlint\.[\w.]+)` \| `([^`]*)` \|", EXTENSION_README, re.M)
    assert [name for name, _ in listed] == list(properties)
    for name, default in listed:
        assert json.loads(default) == properties[name]["default"], name
    commands = {c["command"]: c["title"] for c in MANIFEST["contributes"]["commands"]}
    listed_commands = re.findall(r"^\| gradlint: ([^|]+?) \|", EXTENSION_README, re.M)
    assert sorted(listed_commands) == sorted(commands.values())


def test_the_readme_lists_every_editor_setting_the_server_reads():
    from gradlint.server.settings import KEYS, parse_settings

    section = README[README.index("## In your editor: `gradlint lsp`"):]
    table = section[section.index("| setting | default | what it does |"):]
    table = table[:table.index("\n\n")]
    assert re.findall(r"^\| `(\w+)` \|", table, re.M) == list(KEYS)
    # a misspelt one is reported, not silently dropped
    _, problems = parse_settings({"runTimout": 5, "trace": {"server": "off"}, "args": []})
    assert problems == [f"unknown setting `runTimout` (known: {', '.join(KEYS)})"]


def test_the_readmes_map_of_the_code_names_every_package_folder():
    """The Development section's map of `gradlint/` names each of its package folders (and
    the rule families and worker subpackages), so a moved or new folder updates the map."""
    section = README[README.index("## Development"):]
    section = section[:section.index("\n## ", 1)] if "\n## " in section[1:] else section
    folders = sorted(p.parent.relative_to(ROOT / "gradlint").as_posix()
                     for p in (ROOT / "gradlint").rglob("__init__.py") if p.parent != ROOT / "gradlint")
    assert folders, "no package folders found"
    missing = []
    for folder in folders:
        parts = folder.split("/")
        named = f"`{folder}/" in section or (
            parts[0] == "rules" and len(parts) == 2 and f"`{parts[1]}`" in section)
        if not named:
            missing.append(folder)
    assert not missing, f"README.md's map of the code does not name {missing}"
