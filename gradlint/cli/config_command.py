"""`gradlint config [PATH]`: the effective configuration for a file, and where each value
came from (gradlint's defaults, which pyproject.toml, or a command-line flag)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..engine.config import ConfigResolver, expand_codes
from ..engine.files import conftest_sets_default_dtype

EXIT_CLEAN = 0


def _codes(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def add_parser(commands) -> None:
    config = commands.add_parser(
        "config", help="show the effective configuration for a file and where it comes from")
    config.add_argument("path", nargs="?", default=".", metavar="PATH",
                        help="a file or directory (default: .)")
    config.add_argument("--format", choices=["text", "json"], default="text")
    config.add_argument("--select", type=_codes, metavar="CODES",
                        help="as for `gradlint check`: shown as coming from the flag")
    config.add_argument("--ignore", type=_codes, default=[], metavar="CODES",
                        help="as for `gradlint check`: shown as coming from the flag")
    config.add_argument("--config", type=Path, metavar="PYPROJECT",
                        help="use this pyproject.toml instead of discovering one")


def config_command(args: argparse.Namespace) -> int:
    # (imported here: building the parser for `gradlint check` must not import the rules)
    from ..engine.config_report import Override, explain

    cwd = Path.cwd()
    resolver = ConfigResolver(cwd, args.config)
    path = Path(args.path)
    target = path if not path.is_dir() else path / "__init__.py"  # a directory: its files
    config = resolver.for_path(target.absolute())
    overrides = []
    if args.select is not None:
        overrides.append(Override("select", expand_codes(args.select, "--select"), "--select"))
    if args.ignore:
        overrides.append(Override("ignore", expand_codes(args.ignore, "--ignore"), "--ignore"))
    report = explain(target.absolute(), path.as_posix(), config, overrides,
                     dtype_unknown=conftest_sets_default_dtype(target.absolute(), config.root))
    if args.config is not None and report.config_file:
        report.config_file += " (--config)"
    if args.format == "json":
        print(json.dumps(report.as_json(), indent=2))
    else:
        for line in report.text():
            print(line)
    return EXIT_CLEAN
