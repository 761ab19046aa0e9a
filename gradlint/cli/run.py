"""`gradlint run`: prove gradients by running gradcheck in workers (the user's interpreter)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..analysis.source import SourceDecodeError
from ..engine.batch import default_workers, in_shard, parse_shard
from ..engine.config import ConfigResolver
from .cache_location import cache_directory
from ..engine.files import UsageError, discover, read_text, resolves_inside
from ..engine.reading import is_notebook
from ..runner import DEFAULT_LIMITS, WorkerClient, WorkerStartError, adopt_orphans, kill_orphans

from ..runner.report import headline, mark, render_text, worker_advice

if TYPE_CHECKING:  # imported where used: libcst's import would delay the worker's start
    from ..engine.linter import LintCache
    from ..runner.plans import RunPlan
    from ..runner.prove import Proof
    from ..runner.targets import Target

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def add_parser(commands) -> None:
    run = commands.add_parser("run", help="run gradcheck on Functions, custom ops and gradcheck calls "
                                          "(executes code)")
    run.add_argument("targets", nargs="*", metavar="PATH[::SYMBOL]",
                     help="files, directories, or file::Symbol / file::LINE (default: .)")
    run.add_argument("-j", "--jobs", type=int, default=0, metavar="N",
                     help="parallel runs (default: one per CPU)")
    run.add_argument("--shard", metavar="K/N",
                     help="run only the K-th of N disjoint parts of the targets (for CI matrices)")
    run.add_argument("--format", choices=["text", "json"], default="text")
    timeout = DEFAULT_LIMITS["timeout_s"]
    memory = DEFAULT_LIMITS["memory_bytes"] // 2 ** 20
    run.add_argument("--timeout", type=float, default=timeout, metavar="SECONDS",
                     help=f"per run (default {timeout:g})")
    run.add_argument("--memory-limit", type=int, default=memory, metavar="MIB",
                     help=f"memory a run may allocate, beyond what torch maps (default {memory})")
    run.add_argument("--python", metavar="PATH", default=None,
                     help="interpreter that runs the checks (default: the one running gradlint)")
    run.add_argument("--no-cache", action="store_true", help="ignore and do not write cached results")
    run.add_argument("--cache-dir", type=Path, metavar="DIR",
                     help="where to keep the cache (default: .gradlint_cache/ in the project root, "
                          "or $GRADLINT_CACHE_DIR)")
    run.add_argument("-o", "--option", action="append", default=[], metavar="NAME=VALUE",
                     help="a check option, e.g. eps=1e-4, atol=1e-3, check_batched_grad=true, "
                          "gradgradcheck=false, fast_mode=false (repeatable; see "
                          "docs/run-result-schema.md)")
    run.add_argument("--exit-zero", action="store_true", help="exit 0 even when a check fails")
    run.add_argument("--force-exclude", action="store_true",
                     help="apply `exclude` to files named on the command line too (pre-commit)")
    run.add_argument("--strict", action="store_true",
                     help="second-order failures (⚠ not twice differentiable) and inconclusive runs fail too")
    run.add_argument("--root", metavar="DIR", default=None,
                     help="import root: put DIR first on sys.path and name modules from it (default: found "
                          "like pytest does, from __init__.py files and the project's pyproject.toml)")


def run_command(args: argparse.Namespace) -> int:
    cwd = Path.cwd()
    python = args.python or sys.executable
    adopt_orphans()  # what escapes a worker that dies abruptly is adopted here, not by init
    try:
        outcome = asyncio.run(_plan_and_run(args, python, cwd))
    finally:
        kill_orphans()  # nothing a run started outlives `gradlint run`
    if outcome is None:
        return EXIT_ERROR
    proofs, named, skipped = outcome
    if not proofs and not skipped:
        if args.format == "json":
            print("[]")
        else:
            print("No gradcheck targets found (autograd Functions, custom ops or gradcheck calls).")
        return EXIT_CLEAN
    return _report(proofs, named, skipped, args, cwd)


async def _plan_and_run(args, python: str, cwd: Path):
    """The worker starts (importing torch, seconds) while the files are read and planned."""
    client = WorkerClient(python, str(cwd), max_parallel=args.jobs if args.jobs > 0 else default_workers())
    starting = asyncio.ensure_future(client.start())
    try:
        plans, named, skipped = await asyncio.to_thread(_plan_all, args, cwd)
        if not plans:
            return [], named, skipped
        proofs = await _run_all(plans, client, starting, args, cwd)
        return None if proofs is None else (proofs, named, skipped)
    finally:
        if not starting.done():
            starting.cancel()
        await asyncio.gather(starting, return_exceptions=True)
        await client.close()


def _plan_all(args, cwd: Path) -> tuple[list[RunPlan], set[str], list[tuple[str, str, str]]]:
    """(plans, targets named on the command line, (display, reason, kind) of those left out)."""
    from ..engine.linter import LintCache
    from ..runner.plans import not_runnable, plan, runnable
    from ..runner.prove import dedupe
    from ..runner.targets import find_targets

    resolver = ConfigResolver(cwd)
    cache = LintCache()
    plans: list[RunPlan] = []
    named: set[str] = set()
    limits = {"memory_bytes": max(256, args.memory_limit) * 2 ** 20}
    options = parse_options(args.option)
    if args.strict:
        options["strict"] = True
    explicit_root = Path(args.root).resolve() if args.root else None
    if explicit_root is not None and not explicit_root.is_dir():
        raise UsageError(f"--root is not a directory: {args.root}")
    common = dict(cache=cache, limits=limits, options=options, explicit_root=explicit_root)
    skipped: list[tuple[str, str, str]] = []  # (display, reason, kind)
    for spec in args.targets or ["."]:
        path_text, _, symbol = spec.partition("::")
        path = Path(path_text)
        if not path.exists():
            raise UsageError(f"path does not exist: {path_text}")
        if is_notebook(path.name):
            raise UsageError(f"{path_text}: gradlint run does not run notebooks "
                             f"(`gradlint check` checks them statically)")
        if symbol:
            target = _named_target(path, symbol, cache)
            root = resolver.for_path(path).root
            named_plan = plan(target, path, _read(path), root, display=f"{_relative(path, cwd)}::{symbol}",
                              **common)
            plans.append(named_plan)
            named.add(named_plan.display)
            continue
        for file in discover([path], resolver, force_exclude=args.force_exclude):
            if path.is_dir() and not resolves_inside(file, path):
                print(f"gradlint: skipped {file}: it is a link to {file.resolve()}, outside {path_text}; "
                      f"name the file to run it", file=sys.stderr)
                continue
            try:
                text = _read(file)
            except UsageError:
                continue
            root = resolver.for_path(file).root
            targets = find_targets(text, cache)
            for target in runnable(targets):
                name = _shown(target)
                plans.append(plan(target, file, text, root, display=f"{_relative(file, cwd)}::{name}", **common))
            for target in not_runnable(targets):
                skipped.append((f"{_relative(file, cwd)}::{_shown(target)}", target.skip or "", target.kind))
    plans = dedupe(plans)
    if args.shard:
        shard = parse_shard(args.shard)
        plans = [item for item in plans if in_shard(item.display, shard)]
        skipped = [item for item in skipped if in_shard(item[0], shard)]
    return plans, named, skipped


OPTIONS = ("eps", "atol", "rtol", "nondet_tol", "check_undefined_grad", "check_grad_dtypes",
           "check_batched_grad", "fast_mode", "gradgradcheck", "check_forward_ad",
           "check_input_mutation", "check_random", "check_nondeterminism", "check_low_precision",
           "promote", "seed", "worst_k", "num_threads", "strict", "draws")


def parse_options(items: list[str]) -> dict[str, Any]:
    """`name=value` pairs; values are JSON (numbers, true/false, "auto") or bare strings."""
    options: dict[str, Any] = {}
    for item in items:
        name, sep, raw = item.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or name not in OPTIONS:
            raise UsageError(f"unknown check option `{item}` (one of: {', '.join(OPTIONS)})")
        try:
            options[name] = json.loads(raw)
        except ValueError:
            options[name] = raw.strip()
    return options


def _read(path: Path) -> str:
    try:
        return read_text(path)
    except (OSError, SourceDecodeError) as error:
        reason = getattr(error, "message", None) or getattr(error, "strerror", None) or error
        raise UsageError(f"cannot read {path}: {reason}") from None


def _named_target(path: Path, symbol: str, cache: LintCache) -> Target:
    from ..runner.targets import find_targets, symbol_target

    if not path.is_file():
        raise UsageError(f"`{path}::{symbol}` needs a file, not a directory")
    text = _read(path)
    if symbol.isdigit():
        line = int(symbol)
        for target in find_targets(text, cache):
            if target.kind == "call_site" and target.line <= line <= target.end_line:
                return target
        raise UsageError(f"no gradcheck call at {path}:{line}")
    target = symbol_target(text, symbol, cache)
    if target is None:
        raise UsageError(f"no autograd Function, custom op or module-level function `{symbol}` in {path}")
    return target


def _shown(target: Target) -> str:
    """How a target is named after `file::` (a custom op by its "ns::name")."""
    if target.kind == "call_site":
        return f"line {target.line}"
    if target.kind == "custom_op":
        return target.name
    return target.qualname or target.name


def _relative(path: Path, base: Path) -> str:
    try:
        return path.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


class _Progress:
    def __init__(self, total: int, enabled: bool):
        self.total = total
        self.done = 0
        self.enabled = enabled
        self.current = ""

    def update(self, text: str) -> None:
        self.current = text
        self.draw()

    def finish_one(self) -> None:
        self.done += 1
        self.draw()

    def draw(self) -> None:
        if not self.enabled:
            return
        width = 24
        filled = int(width * self.done / max(self.total, 1))
        bar = "█" * filled + "·" * (width - filled)
        sys.stderr.write(f"\r\x1b[2K{bar} {self.done}/{self.total} {self.current[:60]}")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\r\x1b[2K")
            sys.stderr.flush()


async def _run_all(plans: list[RunPlan], client: WorkerClient, starting, args, cwd: Path) -> list[Proof] | None:
    from ..runner.cache import ResultCache
    from ..runner.prove import Prover

    progress = _Progress(len(plans), sys.stderr.isatty() and args.format == "text")
    try:
        progress.update("starting the worker (importing torch)…")
        try:
            info = await starting
        except WorkerStartError as error:
            progress.close()
            advice = worker_advice(error.reason, client.python, "`gradlint run --python PATH ...`")
            print(f"gradlint: error: {error.reason}. {' '.join(advice)}", file=sys.stderr)
            return None
        cache = ResultCache(None if args.no_cache else _runs_cache(args.cache_dir, cwd))
        prover = Prover(cache, f"{info.executable}:{info.torch}")

        def run(item: RunPlan, request: dict):
            def on_progress(message: str, percentage: int | None) -> None:
                progress.update(f"{item.display}: {message}")

            return client.run(request, timeout=args.timeout, on_progress=on_progress)

        return await prover.prove_all(plans, run, on_proved=lambda _proof: progress.finish_one())
    finally:
        progress.close()


def _report(proofs: list[Proof], named: set[str], skipped: list[tuple[str, str, str]], args, cwd: Path) -> int:
    counts = {"passed": 0, "failed": 0, "warnings": 0, "inconclusive": 0, "skipped": len(skipped)}
    for proof in proofs:
        counts[_counted_as(proof, named)] += 1
    if args.format == "json":
        rows = [proof.to_json() for proof in proofs]
        rows += [{"target": display, "kind": kind, "skipped": reason, "result": None}
                 for display, reason, kind in skipped]
        print(json.dumps(rows, indent=2))
    else:
        relative = lambda p: _relative(Path(p), cwd) if p else p  # noqa: E731
        later = []
        for proof in proofs:
            result, display = proof.result, proof.plan.display
            if result.passed:
                took = result.timings.get("total_s")
                cached = " (cached)" if proof.cached else ""
                print(f"{mark(result)} {display}{cached}"
                      f"{f'  {took:.2f} s' if isinstance(took, (int, float)) else ''}")
            elif result.undecided and display not in named:
                later.append(f"{mark(result)} {display}: {headline(result)}")
            else:
                print(render_text(result, display, relative, proof.inputs_source))
        later += [f"- {display}: skipped: {reason}" for display, reason, _kind in skipped]
        if later:
            print("\nNot proved (no verdict):")
            print("\n".join(f"  {line}" for line in later))
        parts = [f"{counts['passed']} passed", f"{counts['failed']} failed"]
        for key in ("warnings", "inconclusive", "skipped"):
            if counts[key]:
                parts.append(f"{counts[key]} {key if key != 'warnings' else 'with warnings'}")
        print(f"\n{', '.join(parts)}.")
    failed = counts["failed"] + (counts["warnings"] + counts["inconclusive"] if args.strict else 0)
    return EXIT_CLEAN if args.exit_zero or failed == 0 else EXIT_FINDINGS


def _counted_as(proof: Proof, named: set[str]) -> str:
    """The summary line's count a result goes to. Without inputs, a target counts as
    skipped unless it was named; a cancelled run counts as failed."""
    result = proof.result
    if result.passed or result.warned:
        return "passed" if result.passed else "warnings"
    if result.undecided:
        if result.status == "inconclusive":
            return "inconclusive"
        return "failed" if proof.plan.display in named else "skipped"
    return "failed"


def _runs_cache(explicit: Path | None, cwd: Path) -> Path | None:
    """The results of runs, in the project's cache directory (`gradlint clean` removes it)."""
    from ..engine.check_cache import mark

    directory = cache_directory(explicit, ConfigResolver(cwd), cwd)
    try:
        mark(directory)
    except OSError:
        return None  # a read-only place: runs are not cached
    return directory / "runs"
