"""The `gradlint` command.

Exit status: 0 no findings, 1 findings (or a failed gradcheck), 2 usage or tool error
(with one line on stderr).
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Sequence

from .. import __version__
from ..engine.config import ConfigError, ConfigResolver, expand_codes
from ..engine.files import (FileReport, UsageError, discover, lint_file, lint_text, options_for)
from ..engine.fixes import fixes_apply
from ..engine.linter import LintCache
from ..engine.notebooks import is_notebook, unified_cell_diff
from ..findings import Finding
from ..rules import ALL_RULES, RULES_BY_CODE, RULES_BY_NAME
from . import ci_output, output

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
PARALLEL_THRESHOLD = 64  # files; below this a process pool costs more than it saves


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one clear line, exit 2
        self.exit(EXIT_ERROR, f"gradlint: error: {message}\n")


def _codes(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="gradlint", description="Find gradient bugs in PyTorch autograd code.")
    parser.add_argument("--version", action="version", version=f"gradlint {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    check = commands.add_parser("check", help="analyse files statically (no code is run)")
    check.add_argument("paths", nargs="*", type=str, metavar="PATH",
                       help="files or directories (default: .); `-` reads standard input")
    check.add_argument("--format", choices=["text", "json", "json-lines", "sarif", "github", "junit"],
                       default="text")
    check.add_argument("--select", type=_codes, metavar="CODES",
                       help="comma-separated codes or prefixes to enable (replaces `select`)")
    check.add_argument("--ignore", type=_codes, default=[], metavar="CODES",
                       help="comma-separated codes or prefixes to disable (adds to `ignore`)")
    check.add_argument("--fix", action="store_true", help="apply safe fixes")
    check.add_argument("--unsafe-fixes", action="store_true",
                       help="also show and apply unsafe fixes")
    check.add_argument("--diff", action="store_true",
                       help="print the fixes as a diff, write nothing (exit 1 if there is a diff)")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even with findings")
    check.add_argument("--statistics", action="store_true", help="count findings per rule")
    check.add_argument("--stdin-filename", metavar="NAME",
                       help="read the source from standard input and report it as NAME")
    check.add_argument("--config", type=Path, metavar="PYPROJECT",
                       help="use this pyproject.toml instead of discovering one")
    check.add_argument("--force-exclude", action="store_true",
                       help="apply `exclude` to files named on the command line too (pre-commit)")
    check.add_argument("--no-color", action="store_true", help="never colour the output")
    check.add_argument("-j", "--jobs", type=int, default=0, metavar="N",
                       help="parallel processes (default: one per CPU for large trees)")
    check.add_argument("-q", "--quiet", action="store_true", help="print findings only, no summary")

    rule = commands.add_parser("rule", help="print the documentation of a rule")
    rule.add_argument("code", metavar="CODE", help="a rule code (GL001) or name")

    rules = commands.add_parser("rules", help="list all rules")
    rules.add_argument("--format", choices=["text", "json"], default="text")

    from .run import add_parser as add_run_parser

    add_run_parser(commands)

    from .config_command import add_parser as add_config_parser

    add_config_parser(commands)

    lsp = commands.add_parser("lsp", help="run the language server (stdio)")
    lsp.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead (for debugging)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "check":
            return _check(args)
        if args.command == "rule":
            return _rule(args.code)
        if args.command == "rules":
            return _rules(args.format)
        if args.command == "lsp":
            return _lsp(args.tcp)
        if args.command == "config":
            from .config_command import config_command

            return config_command(args)
        if args.command == "run":
            from .run import run_command

            return run_command(args)
    except (UsageError, ConfigError) as error:
        print(f"gradlint: error: {error}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("gradlint: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_CLEAN
    parser.print_help(sys.stderr)
    return EXIT_ERROR


# -- check ------------------------------------------------------------------------------
def _check(args: argparse.Namespace) -> int:
    if hasattr(sys.stdout, "reconfigure"):  # a file name that is not UTF-8 prints as its bytes
        sys.stdout.reconfigure(errors="surrogateescape")  # (JSON and SARIF carry it losslessly)
    select = expand_codes(args.select, "--select") if args.select is not None else None
    ignore = expand_codes(args.ignore, "--ignore")
    unsafe = args.unsafe_fixes
    fixing = args.fix or args.diff
    # the summary's "N fixable with `--fix`" is counted by fixing a copy of each file
    count_fixes = args.format == "text" and not fixing and not args.quiet
    cwd = Path.cwd()
    resolver = ConfigResolver(cwd, args.config)
    style = output.Style(args.format == "text" and not args.no_color and sys.stdout.isatty()
                         and "NO_COLOR" not in os.environ)

    stdin_mode = args.stdin_filename is not None or args.paths == ["-"]
    if stdin_mode:
        if args.paths not in ([], ["-"]):
            raise UsageError("`-`/--stdin-filename cannot be combined with other paths")
        display = args.stdin_filename or "-"
        path = Path(display) if args.stdin_filename else None
        config = resolver.for_path(path.absolute() if path else cwd / "stdin.py")
        options = options_for(path.absolute() if path else cwd / "stdin.py", config, select, ignore)
        text = _read_stdin()
        reports = [lint_text(text, path, display, options, fix=fixing, unsafe=unsafe,
                             count_fixes=count_fixes)]
        if args.fix and not args.diff:
            sys.stdout.write(reports[0].fixed or text)
            blocked = set() if fixes_apply(reports[0].findings) else {display}
            for line in output.render_text(reports[0].findings, output.Style(False), unsafe, blocked):
                print(line, file=sys.stderr)
            return EXIT_CLEAN if args.exit_zero or not output.failing(reports[0].findings) \
                else EXIT_FINDINGS
    else:
        paths = [Path(p) for p in (args.paths or ["."])]
        files = list(discover(paths, resolver, notebooks=True, force_exclude=args.force_exclude))
        reports = _lint_files(files, resolver, select, ignore, fixing, unsafe, args.jobs, cwd,
                              count_fixes)

    if args.diff:
        return _print_diffs(reports, args.exit_zero)
    if args.fix:
        for report in reports:
            if report.fixed is not None and report.fixed != report.original:
                report.path.write_text(report.fixed, encoding="utf-8", newline="")

    findings = [f for report in reports for f in report.findings]
    fixed = sum(report.fixes_applied for report in reports)
    fixable = sum(report.fixable for report in reports) if count_fixes else None
    blocked = {report.display for report in reports if not fixes_apply(report.findings)}
    _print(findings, args, style, unsafe, fixed, cwd, fixable, blocked, reports)
    broken = [report for report in reports if report.internal_error]
    for report in broken:
        print(f"gradlint: error: {report.display}: internal error ({report.internal_error}); "
              f"the other files were checked", file=sys.stderr)
    if broken:
        return EXIT_ERROR
    if args.exit_zero or not output.failing(findings):
        return EXIT_CLEAN  # hints are shown, but do not fail the check
    return EXIT_FINDINGS


def _read_stdin() -> str:
    from ..analysis.source import SourceDecodeError, decode_source

    data = sys.stdin.buffer.read()
    try:
        return decode_source(data)
    except SourceDecodeError as error:
        raise UsageError(f"standard input: {error.message}") from None


def _display(path: Path, cwd: Path) -> str:
    try:
        return path.resolve().relative_to(cwd.resolve()).as_posix() if path.is_absolute() else path.as_posix()
    except ValueError:
        return path.as_posix()


def _lint_one(job: tuple) -> FileReport:
    path, display, options, fixing, unsafe, count_fixes = job
    return lint_file(path, display, options, fix=fixing, unsafe=unsafe, cache=_WORKER_CACHE,
                     count_fixes=count_fixes)


_WORKER_CACHE = LintCache(capacity=2000)


def _lint_files(files: list[Path], resolver: ConfigResolver, select, ignore, fixing: bool,
                unsafe: bool, jobs: int, cwd: Path, count_fixes: bool) -> list[FileReport]:
    work = []
    for path in files:
        config = resolver.for_path(path)
        work.append((path, _display(path, cwd), options_for(path, config, select, ignore), fixing, unsafe,
                     count_fixes))
    workers = jobs if jobs > 0 else (os.cpu_count() or 1)
    if workers > 1 and len(work) >= PARALLEL_THRESHOLD:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(_lint_one, work, chunksize=8))
    return [_lint_one(job) for job in work]


def _print(findings: list[Finding], args, style: output.Style, unsafe: bool, fixed: int,
           cwd: Path, fixable: int | None, blocked: set[str], reports: list[FileReport]) -> None:
    if args.format == "junit":
        print(ci_output.render_junit(reports))
        return
    if args.format == "json-lines":
        for line in ci_output.render_json_lines(findings):
            print(line)
        return
    if args.format == "json":
        print(output.render_json(findings))
        return
    if args.format == "sarif":
        print(output.render_sarif(findings, cwd))
        return
    if args.format == "github":
        for line in output.render_github(findings):
            print(line)
        return
    for line in output.render_text(findings, style, unsafe, blocked):
        print(line)
    if args.statistics and findings:
        print()
        for line in output.statistics(findings, unsafe, blocked):
            print(line)
    if not args.quiet:
        if findings or fixed:
            print()
        for line in output.summary(findings, style, unsafe=unsafe, fixed=fixed, fixing=args.fix,
                                   fixable=fixable, blocked=blocked):
            print(line)


def _print_diffs(reports: list[FileReport], exit_zero: bool) -> int:
    changed = 0
    for report in reports:
        if report.fixed is None or report.original is None or report.fixed == report.original:
            continue
        changed += 1
        if is_notebook(report.display):
            sys.stdout.writelines(unified_cell_diff(report.display, report.original, report.fixed))
            continue
        diff = difflib.unified_diff(report.original.splitlines(keepends=True),
                                    report.fixed.splitlines(keepends=True),
                                    fromfile=f"a/{report.display}", tofile=f"b/{report.display}")
        sys.stdout.writelines(line if line.endswith("\n") else line + "\n" for line in diff)
    fixes = sum(r.fixes_applied for r in reports)
    if changed:
        print(f"\nWould fix {fixes} problem{'s' if fixes != 1 else ''} in {changed} "
              f"file{'s' if changed != 1 else ''}.", file=sys.stderr)
    return EXIT_CLEAN if exit_zero or not changed else EXIT_FINDINGS


# -- lsp --------------------------------------------------------------------------------
def _lsp(tcp: str | None) -> int:
    if tcp is not None and not tcp.rpartition(":")[2].isdigit():
        raise UsageError(f"--tcp expects HOST:PORT, got `{tcp}`")
    from ..server.server import start

    start(tcp)
    return EXIT_CLEAN


# -- rule / rules -----------------------------------------------------------------------
def _rule(code: str) -> int:
    rule = RULES_BY_CODE.get(code.upper()) or RULES_BY_NAME.get(code.lower())
    if rule is None:
        raise UsageError(f"unknown rule `{code}` (see `gradlint rules`)")
    print(f"# {rule.name} ({rule.code})")
    print()
    print(f"Severity: {rule.severity.value}. {rule.fix_availability()}")
    print()
    print(rule.docs())
    return EXIT_CLEAN


def _rules(fmt: str) -> int:
    if fmt == "json":
        print(json.dumps([{
            "code": rule.code, "name": rule.name, "severity": rule.severity.value,
            "fixable": rule.fixable(), "summary": rule.summary,
        } for rule in ALL_RULES], indent=2))
        return EXIT_CLEAN
    width = max(len(rule.name) for rule in ALL_RULES)
    for rule in ALL_RULES:
        fixable = "[*]" if rule.fixable() else "   "
        print(f"{rule.code}  {fixable}  {rule.name:<{width}}  {rule.summary}")
    print("\n[*] fixable: see `gradlint rule CODE` for the documentation.")
    return EXIT_CLEAN


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
