"""The `gradlint` command.

Exit status: 0 no findings, 1 findings (or a failed gradcheck), 2 usage or tool error
(with one line on stderr).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Sequence

from .. import __version__
from ..engine.config import ConfigError, ConfigResolver, expand_codes
from ..engine.batch import Job, check_files, in_shard, parse_shard
from ..engine.check_cache import CheckCache, clean
from ..engine.timings import Timings, one_file
from ..engine.files import (FileOptions, FileReport, Resolved, UsageError, discover, lint_text,
                             options_for)
from ..engine.fixes import fixes_apply
from ..analysis.source import decode_source
from ..engine.reading import is_notebook
from ..findings import Finding
from . import baseline as baseline_cli
from .cache_location import cache_directory
from . import output

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class _Formatter(argparse.HelpFormatter):
    """argparse's formatter, sized without importing shutil (argparse builds one for every
    option it adds; shutil and the compression modules it imports cost a cached re-run)."""

    def __init__(self, prog: str, **kwargs):
        try:
            width = int(os.environ.get("COLUMNS", "0")) or os.get_terminal_size(sys.stderr.fileno()).columns
        except (OSError, ValueError):
            width = 80
        kwargs.setdefault("width", max(width - 2, 20))
        super().__init__(prog, **kwargs)


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):  # one clear line, exit 2
        self.exit(EXIT_ERROR, f"gradlint: error: {message}\n")


def _codes(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


# commands that never need `gradlint run`'s modules (the runner, asyncio): a re-run of
# `check` answered from the cache should not pay for importing them
_LIGHT_COMMANDS = frozenset({"check", "clean", "rule", "rules", "lsp", "trust", "untrust"})


def build_parser(with_run: bool = True) -> argparse.ArgumentParser:
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
    check.add_argument("--timings", action="store_true",
                       help="show where the CPU time went, by phase and by rule (on stderr)")
    check.add_argument("--stdin-filename", metavar="NAME",
                       help="read the source from standard input and report it as NAME")
    check.add_argument("--config", type=Path, metavar="PYPROJECT",
                       help="use this pyproject.toml instead of discovering one")
    check.add_argument("--force-exclude", action="store_true",
                       help="apply `exclude` to files named on the command line too (pre-commit)")
    check.add_argument("--no-color", action="store_true", help="never colour the output")
    check.add_argument("-j", "--jobs", type=int, default=0, metavar="N",
                       help="parallel processes (default: one per CPU when the work is large enough)")
    check.add_argument("--shard", metavar="K/N",
                       help="check only the K-th of N disjoint parts of the files (for CI matrices)")
    check.add_argument("--no-cache", action="store_true",
                       help="neither read nor write the cache of findings")
    check.add_argument("--cache-dir", type=Path, metavar="DIR",
                       help="where to keep the cache (default: .gradlint_cache/ in the project "
                            "root, or $GRADLINT_CACHE_DIR)")
    check.add_argument("-q", "--quiet", action="store_true", help="print findings only, no summary")
    check.add_argument("--write-baseline", action="store_true",
                       help="record the current findings in the baseline (gradlint-baseline.json at "
                            "the project root, or `baseline` in [tool.gradlint]); later runs report "
                            "only findings not in it; fixed entries are dropped")
    check.add_argument("--baseline", type=Path, metavar="FILE",
                       help="the baseline file to use (and write) instead of the configured one")
    check.add_argument("--no-baseline", action="store_true",
                       help="report every finding, also those in the baseline")

    clean_command = commands.add_parser("clean", help="remove the cache of findings")
    clean_command.add_argument("--cache-dir", type=Path, metavar="DIR",
                               help="the cache to remove (default: the project's)")

    rule = commands.add_parser("rule", help="print the documentation of a rule")
    rule.add_argument("code", metavar="CODE", help="a rule code (GL001) or name")

    rules = commands.add_parser("rules", help="list all rules")
    rules.add_argument("--format", choices=["text", "json"], default="text")

    if with_run:
        from .run import add_parser as add_run_parser

        add_run_parser(commands)

    from .config_command import add_parser as add_config_parser

    add_config_parser(commands)

    from .trust_command import add_parsers as add_trust_parsers

    add_trust_parsers(commands)

    lsp = commands.add_parser("lsp", help="run the language server (stdio)")
    lsp.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead (for debugging)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(with_run=not (argv and argv[0] in _LIGHT_COMMANDS))
    args = parser.parse_args(argv)
    try:
        if args.command == "check":
            return _check(args)
        if args.command == "rule":
            return _rule(args.code)
        if args.command == "rules":
            return _rules(args.format)
        if args.command == "clean":
            return _clean(args)
        if args.command == "lsp":
            return _lsp(args.tcp)
        if args.command == "config":
            from .config_command import config_command

            return config_command(args)
        if args.command == "run":
            from .run import run_command

            return run_command(args)
        if args.command in ("trust", "untrust"):
            from .trust_command import trust_command, untrust_command

            return (trust_command if args.command == "trust" else untrust_command)(args)
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
# libcst trees are millions of small objects: with Python's default first threshold (700
# allocations) the cyclic collector ran so often that it took about a tenth of a cold run,
# without freeing anything the trees' own reference counts would not (one process, -j 1,
# same run: whole torch package 15.2 -> 12.9 s CPU, a 250-file autograd tree 40.4 -> 37.0 s,
# a 50,000-line file 10.9 -> 9.7 s; peak RSS within 1%). Workers forked later inherit it.
COLLECTION_THRESHOLDS = (10_000, 10, 10)


def _fewer_collections() -> None:
    import gc

    gc.set_threshold(*COLLECTION_THRESHOLDS)


def _check(args: argparse.Namespace) -> int:
    _fewer_collections()
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
    if args.write_baseline and (args.no_baseline or args.diff or stdin_mode):
        other = "--no-baseline" if args.no_baseline else "--diff" if args.diff else "standard input"
        raise UsageError(f"--write-baseline cannot be combined with {other}")
    checked: list[baseline_cli.Checked] = []
    recorder = Timings() if args.timings else None
    if stdin_mode:
        if args.paths not in ([], ["-"]):
            raise UsageError("`-`/--stdin-filename cannot be combined with other paths")
        display = args.stdin_filename or "-"
        path = Path(display) if args.stdin_filename else None
        config = resolver.for_path(path.absolute() if path else cwd / "stdin.py")
        options = options_for(path.absolute() if path else cwd / "stdin.py", config, select, ignore)
        text = _read_stdin()
        with one_file(recorder, display):
            reports = [lint_text(text, path, display, options, fix=fixing, unsafe=unsafe,
                                 count_fixes=count_fixes)]
        checked.append(_checked(reports[0], config, options, args.baseline))
        if args.fix and not args.diff:
            sys.stdout.write(reports[0].fixed or text)
            blocked = set() if fixes_apply(reports[0].findings) else {display}
            for line in output.render_text(reports[0].findings, output.Style(False), unsafe, blocked):
                print(line, file=sys.stderr)
            if recorder is not None:
                _print_timings(recorder, 1)
            return EXIT_CLEAN if args.exit_zero or not output.failing(reports[0].findings) \
                else EXIT_FINDINGS
    else:
        shard = parse_shard(args.shard) if args.shard else None
        if args.jobs < 0:
            raise UsageError("-j/--jobs must be 0 (automatic) or more")
        paths = [Path(p) for p in (args.paths or ["."])]
        file_options = FileOptions(resolver, select, ignore)
        jobs = []
        resolve = Resolved()
        real_cwd = cwd.resolve()
        for path in discover(paths, resolver, notebooks=True, force_exclude=args.force_exclude):
            display = _display(path, real_cwd, resolve)
            if in_shard(display, shard):
                jobs.append(Job(path, display, file_options(path)))
        cache = None if args.no_cache else CheckCache(cache_directory(args.cache_dir, resolver, cwd))
        reports = check_files(jobs, workers=args.jobs, fixing=fixing, unsafe=unsafe, cache=cache,
                              count_fixes=count_fixes, timings=recorder, process_ends=True)
        checked = [_checked(report, file_options.config(job.path), job.options, args.baseline)
                   for job, report in zip(jobs, reports)]

    if args.diff:
        code = _print_diffs(reports, args.exit_zero)
        if recorder is not None:
            _print_timings(recorder, len(reports))
        return code
    if args.fix:
        from .write_back import WriteBackError, write_fixed  # (only when fixing)

        for report in reports:
            if report.fixed is not None and report.original is not None and report.fixed != report.original:
                try:
                    write_fixed(report.path, report.fixed, report.original, decode_source)
                except (WriteBackError, OSError) as error:
                    message = error.strerror if isinstance(error, OSError) else str(error)
                    print(f"gradlint: error: {report.display}: fixes not written: {message}",
                          file=sys.stderr)
                    report.fixes_applied = 0

    show = baseline_cli.shown_path(cwd)
    if args.write_baseline:
        written = baseline_cli.write(checked, show)
        if not args.quiet:
            for line in written.written:
                print(line, file=sys.stderr if args.format != "text" else sys.stdout)
        if recorder is not None:
            _print_timings(recorder, len(reports))
        return EXIT_CLEAN
    findings = [f for report in reports for f in report.findings]
    fixed = sum(report.fixes_applied for report in reports)
    fixable = sum(report.fixable for report in reports) if count_fixes else None
    blocked = {report.display for report in reports if not fixes_apply(report.findings)}
    notes: list[str] = []
    if not args.no_baseline:
        outcome = baseline_cli.apply(checked, show)
        if outcome.hidden:  # every format reports only the findings the baselines do not hold
            kept = {id(f) for f in outcome.findings}
            reports = [replace(r, findings=[f for f in r.findings if id(f) in kept]) for r in reports]
            findings = outcome.findings
            fixable = None  # (counted over the findings shown)
        notes = baseline_cli.summary_lines(outcome, show)
        if outcome.removable and args.format != "text" and not args.quiet:
            print(f"gradlint: {baseline_cli.removable_line(outcome.removable)}", file=sys.stderr)
    _print(findings, args, style, unsafe, fixed, cwd, fixable, blocked, reports, notes)
    if recorder is not None:
        _print_timings(recorder, len(reports))
    broken = [report for report in reports if report.internal_error]
    for report in broken:
        print(f"gradlint: error: {report.display}: internal error ({report.internal_error}); "
              f"the other files were checked", file=sys.stderr)
    if broken:
        return EXIT_ERROR
    if args.exit_zero or not output.failing(findings):
        return EXIT_CLEAN  # hints are shown, but do not fail the check
    return EXIT_FINDINGS


def _checked(report: FileReport, config, options, explicit: Path | None) -> "baseline_cli.Checked":
    return baseline_cli.Checked(report, explicit.absolute() if explicit is not None else config.baseline_path,
                                explicit is not None or config.baseline is not None, options.select)


def _print_timings(recorder: Timings, jobs: int) -> None:
    from ..rules import RULES_BY_CODE

    names = {code: rule.name for code, rule in RULES_BY_CODE.items()}
    for line in output.timings(recorder, names, jobs - recorder.files):
        print(line, file=sys.stderr)
    try:
        import resource
    except ImportError:  # pragma: no cover (Windows)
        return
    used = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    print(f"  the whole command so far (start, imports, finding files, workers): "
          f"{sum(u.ru_utime + u.ru_stime for u in used):.3f}", file=sys.stderr)


def _read_stdin() -> str:
    from ..analysis.source import SourceDecodeError, decode_source

    data = sys.stdin.buffer.read()
    try:
        return decode_source(data)
    except SourceDecodeError as error:
        raise UsageError(f"standard input: {error.message}") from None


def _display(path: Path, real_cwd: Path, resolve=Path.resolve) -> str:
    """How a file is shown: relative to the (resolved) working directory when inside it."""
    try:
        return resolve(path).relative_to(real_cwd).as_posix() if path.is_absolute() else path.as_posix()
    except ValueError:
        return path.as_posix()


def _clean(args: argparse.Namespace) -> int:
    cwd = Path.cwd()
    directory = cache_directory(args.cache_dir, ConfigResolver(cwd), cwd)
    if clean(directory):
        print(f"Removed {directory}")
    else:
        print(f"No gradlint cache at {directory}")
    return EXIT_CLEAN


def _print(findings: list[Finding], args, style: output.Style, unsafe: bool, fixed: int,
           cwd: Path, fixable: int | None, blocked: set[str], reports: list[FileReport],
           notes: Sequence[str] = ()) -> None:
    if args.format in ("junit", "json-lines"):
        from . import ci_output
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
        for line in notes:
            print(line)


def _print_diffs(reports: list[FileReport], exit_zero: bool) -> int:
    changed = 0
    for report in reports:
        if report.fixed is None or report.original is None or report.fixed == report.original:
            continue
        changed += 1
        if is_notebook(report.display):
            from ..engine.notebooks import unified_cell_diff

            sys.stdout.writelines(unified_cell_diff(report.display, report.original, report.fixed))
            continue
        import difflib

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

    _fewer_collections()  # (the same gain on a big file's first analysis)
    start(tcp)
    return EXIT_CLEAN


# -- rule / rules -----------------------------------------------------------------------
def _rule(code: str) -> int:
    from ..rules import RULES_BY_CODE, RULES_BY_NAME

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
    from ..rules import ALL_RULES

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
