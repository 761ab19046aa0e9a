#!/usr/bin/env python3
"""Measure `gradlint run` on real published autograd Functions, as a new user would.

For each pinned PyPI release below (downloaded into a cache outside the repository by
the same code as ``real_code_accuracy.py``; nothing is committed), this script:

1. copies the release into a scratch checkout and runs ``gradlint run . --format json``
   from inside it, with no declarations, in an interpreter that has torch 2.13 and the
   package's runtime dependencies (a venv the script makes in the cache);
2. counts, over the autograd Functions it finds: passed, failed (a ✗ on a correct
   Function is a false alarm), inconclusive, skipped — and the same for gradcheck calls;
3. makes wrong-backward mutants of every Function (the first returned gradient scaled by
   2 or negated, the first two returned gradients swapped, the gradient replaced by
   zeros) and runs each with ``gradlint run FILE::Class``: how many could be run, and
   how many of those were reported as a gradient failure.

Functions whose backward is deliberately not the derivative of forward (straight-through
estimators, gradient rerouting) are listed in ``NOT_A_DERIVATIVE`` with the reason, and
are left out of the "correct Functions" figures (their results are still printed).

Usage (run with the repository's venv, where gradlint is installed)::

    .venv/bin/python scripts/runner_accuracy.py                 # everything
    .venv/bin/python scripts/runner_accuracy.py --only entmax   # one package
    .venv/bin/python scripts/runner_accuracy.py --no-mutants    # originals only
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import libcst as cst

sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_code_accuracy import download, extract  # noqa: E402

from runner_hand import confirmed_wrong, find_functions, items_for, label, relative, run_hand  # noqa: E402
from runner_hand_inputs import HAND  # noqa: E402
from runner_mutants import MUTATIONS, mutate  # noqa: E402,F401 - mutate: tests import it from here
from runner_sets import SETS  # noqa: E402

NOT_A_DERIVATIVE: dict[str, str] = dict(SETS["old"]["not_a_derivative"])  # the chosen set's, set by main()
HAND_OF_SET: dict[str, list[dict]] = {}  # the chosen set's hand gradchecks, set by main()


def by_design(target: str) -> str | None:
    for pattern, why in NOT_A_DERIVATIVE.items():
        if fnmatch.fnmatch(target, pattern) or fnmatch.fnmatch(target, "*/" + pattern):
            return why
    return None


GRADIENT_VERDICTS = {"wrong_gradient", "undefined_grad", "batched_grad", "gradcheck_failed",
                     "non_differentiable_point"}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- the interpreter the runs use ---------------------------------------------------------

def run_venv(cache: Path, base: list[str], extra: list[str]) -> Path:
    venv = cache / "runvenv"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    stamp = venv / ".requirements"
    wanted = sorted(set(base + extra))
    if not stamp.exists() or stamp.read_text().split() != wanted:
        log("installing the run interpreter's packages ...")
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                        *wanted], check=True)
        stamp.write_text("\n".join(wanted))
    return python


# -- running gradlint ---------------------------------------------------------------------

def gradlint_run(args: list[str], cwd: Path, python: Path, gradlint: Path, timeout: float = 3600) -> list[dict]:
    cmd = [str(gradlint), "run", *args, "--format", "json", "--no-cache", "--python", str(python),
           "--exit-zero"]
    # no bytecode caches: a mutant written in place must never be run from a stale .pyc
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    try:
        data = json.loads(proc.stdout or "[]")
    except ValueError:
        raise RuntimeError(f"gradlint run printed no JSON (exit {proc.returncode}): "
                           f"{(proc.stderr or proc.stdout)[-600:]}") from None
    return data if isinstance(data, list) else data.get("results", [])


def outcome(entry: dict) -> str:
    """pass | fail | inconclusive | warning | skipped | error (one word per run)."""
    if entry.get("skipped"):
        return "abstract" if "abstract" in str(entry["skipped"]) else "skipped"
    result = entry.get("result") or {}
    status = result.get("status")
    if status == "pass":
        return "pass"
    if status in ("inconclusive", "warning"):
        return status
    if status == "no_inputs" and str(result.get("summary", "")).startswith("abstract"):
        return "abstract"
    if status == "no_inputs" or entry.get("skipped"):
        return "skipped"
    if status == "fail" and result.get("verdict") in GRADIENT_VERDICTS:
        return "fail"
    if result.get("verdict") == "missing_dependency":
        return "env"  # the run interpreter lacks a module (e.g. a compiled extension)
    if status == "timeout":
        return "timeout"  # the run was killed at --timeout: no verdict (slow or overloaded machine)
    return "error"


# -- one package -----------------------------------------------------------------------------

def checkout(cache: Path, name: str, version: str, tag: str) -> Path:
    archive, _kind = download(name, version, cache)
    source = extract(archive, cache, name, version)
    scratch = cache / "runner" / tag / f"{name}-{version}"
    if scratch.exists():
        shutil.rmtree(scratch)
    shutil.copytree(source, scratch, ignore=shutil.ignore_patterns(".gradlint_cache", "__pycache__"))
    return scratch


def measure_package(cache: Path, name: str, version: str, python: Path, gradlint: Path,
                    mutations: tuple[str, ...], tag: str, hand: dict[str, list[dict]]) -> dict:
    root = checkout(cache, name, version, tag)
    t0 = time.monotonic()
    entries = gradlint_run(["."], root, python, gradlint)
    seconds = time.monotonic() - t0
    functions, calls = [], []
    for entry in entries:
        kind = entry.get("kind")
        target = entry.get("target", "")
        row = _row(entry)
        if kind == "function_class":
            symbol = target.split("::")[-1].split(".")[-1]
            row["class"] = symbol
            row["file"] = target.split("::")[0]
            row["by_design"] = by_design(target)
            functions.append(row)
        else:
            calls.append(row)
    if hand:
        label_functions(root, functions, python, hand)
    mutant_rows = run_mutants(root, functions, python, gradlint, mutations, bool(hand)) if mutations else []
    return {"package": name, "version": version, "seconds": seconds, "functions": functions,
            "calls": calls, "mutants": mutant_rows}


def _row(entry: dict) -> dict:
    result = entry.get("result") or {}
    return {"target": entry.get("target", ""), "outcome": outcome(entry),
            "summary": result.get("summary", "") or entry.get("skipped", ""),
            "verdict": result.get("verdict"), "inputs": entry.get("inputs_source", ""),
            "proof": result.get("proof"), "seconds": (result.get("timings") or {}).get("total_s")}


def hand_specs(hand: dict[str, list[dict]], target: str) -> list[dict]:
    for pattern, specs in hand.items():
        if fnmatch.fnmatch(target, pattern) or fnmatch.fnmatch(target, "*/" + pattern):
            return specs
    return []


def label_functions(root: Path, functions: list[dict], python: Path, hand: dict[str, list[dict]]) -> None:
    """Each Function's label from its hand gradchecks: correct, by design, or why it is neither."""
    for fn in functions:
        specs = hand_specs(hand, fn["target"])
        results = list(run_hand(python, root, items_for(fn["file"], fn["class"], specs, fn["target"])).values())
        fn["hand"] = results
        fn["label"] = "by_design" if fn["by_design"] else label(results, specs)


def hand_only(cache: Path, name: str, version: str, python: Path, mutations: tuple[str, ...], tag: str) -> None:
    """Labels and mutant confirmations from the hand gradchecks alone (no gradlint run)."""
    root = checkout(cache, name, version, tag)
    for file, cls in find_functions(root):
        target = f"{file}::{cls}"
        fn = {"target": target, "file": file, "class": cls, "by_design": by_design(target), "inputs": ""}
        label_functions(root, [fn], python, HAND_OF_SET)
        hand = "; ".join(f"{h['status']} {h.get('message', '')[:70]}" for h in fn["hand"])
        print(f"{name}: {target}: {fn['label']}  [{hand}]", flush=True)
        if fn["label"] != "correct" or not mutations:
            continue
        path = root / file
        original = path.read_text()
        for mutation in mutations:
            changed = mutate(original, cls, mutation)
            if changed is None:
                continue
            sibling = path.with_name(f"_glmut_{path.name}")
            sibling.write_text(changed)
            try:
                hand_rows = list(run_hand(python, root, items_for(relative(sibling, root), cls,
                                                                  hand_specs(HAND_OF_SET, target), target)).values())
            finally:
                sibling.unlink()
            verdict = "wrong" if confirmed_wrong(hand_rows) else "EQUIVALENT"
            print(f"    [{mutation}] {verdict}: " + "; ".join(f"{h['status']} {h.get('message', '')[:60]}"
                                                       for h in hand_rows), flush=True)


def run_mutants(root: Path, functions: list[dict], python: Path, gradlint: Path, mutations: tuple[str, ...],
                confirm: bool) -> list[dict]:
    """Every mutant as a sibling module of its original (same package, so relative imports
    work), all run by one `gradlint run` (one worker start). With ``confirm``, only mutants of
    Functions labelled correct, and each is run only when a hand gradcheck confirms it wrong."""
    planned, written, in_place, rows = [], [], [], []
    for fn in functions:
        if fn["by_design"] or (confirm and fn.get("label") != "correct"):
            continue
        if str(fn.get("inputs", "")).startswith(("captured from", "from the gradcheck call")):
            in_place.append(fn)  # its callers (or tests) import the original module: mutate that one
            continue
        path = root / fn["file"]
        original = path.read_text()
        for mutation in mutations:
            changed = mutate(original, fn["class"], mutation)
            if changed is None:
                continue
            sibling = path.with_name(f"_glmut{len(written)}_{path.name}")
            sibling.write_text(changed)
            written.append(sibling)
            if confirm:
                specs = hand_specs(HAND_OF_SET, fn["target"])
                hand = list(run_hand(python, root, items_for(relative(sibling, root), fn["class"], specs,
                                                             f"{fn['target']}[{mutation}]")).values())
                if not confirmed_wrong(hand):
                    rows.append({"target": fn["target"], "mutation": mutation, "outcome": "equivalent",
                                 "summary": "; ".join(f"{h['status']}" for h in hand), "hand": hand})
                    continue
            planned.append((fn, mutation, f"{sibling.relative_to(root).as_posix()}::{fn['class']}"))
    try:
        found = gradlint_run([t for _fn, _m, t in planned], root, python, gradlint) if planned else []
    finally:
        for sibling in written:
            sibling.unlink()
    by_target = {entry.get("target"): entry for entry in found}
    for fn, mutation, target in planned:
        entry = by_target.get(target, {"result": {"status": "error", "summary": "no result"}})
        rows.append(dict(_row(entry), target=fn["target"], mutation=mutation))
    for fn in in_place:
        rows.extend(_mutate_in_place(root, fn, python, gradlint, mutations, confirm))
    return rows


def _mutate_in_place(root: Path, fn: dict, python: Path, gradlint: Path, mutations: tuple[str, ...],
                     confirm: bool) -> list[dict]:
    """Mutants of a Function whose inputs come from the code that calls it: the original file
    is changed (and restored), so that its callers call the mutant; one run each."""
    path = root / fn["file"]
    original = path.read_text()
    rows = []
    try:
        for mutation in mutations:
            changed = mutate(original, fn["class"], mutation)
            if changed is None:
                continue
            path.write_text(changed)
            if confirm:
                specs = hand_specs(HAND_OF_SET, fn["target"])
                hand = list(run_hand(python, root, items_for(fn["file"], fn["class"], specs,
                                                             f"{fn['target']}[{mutation}]")).values())
                if not confirmed_wrong(hand):
                    rows.append({"target": fn["target"], "mutation": mutation, "outcome": "equivalent",
                                 "summary": "; ".join(h["status"] for h in hand), "hand": hand})
                    continue
            found = gradlint_run([fn["target"]], root, python, gradlint)
            entry = found[0] if found else {"result": {"status": "error", "summary": "no result"}}
            rows.append(dict(_row(entry), target=fn["target"], mutation=mutation))
    finally:
        path.write_text(original)
    return rows


# -- report --------------------------------------------------------------------------------------

RAN = ("pass", "fail", "inconclusive", "warning")


def _backward_raised(mutant: dict) -> bool:
    """A wrong backward that makes torch raise (a gradient for a non-tensor input, a wrong
    shape): reported as ✗ "… in backward", pointing at backward — caught too."""
    return mutant["outcome"] == "error" and " in backward" in mutant.get("summary", "")


def _caught(mutant: dict) -> bool:
    return mutant["outcome"] == "fail" or _backward_raised(mutant)


def summarise(rows: list[dict]) -> dict:
    functions = [f for r in rows for f in r["functions"]]
    # abstract bases are not targets (only their subclasses run); the environment is not gradlint's
    correct = [f for f in functions if not f["by_design"] and f["outcome"] not in ("env", "abstract")]
    calls = [c for r in rows for c in r["calls"]]
    mutants = [m for r in rows for m in r["mutants"]]
    oc = Counter(f["outcome"] for f in correct)
    ran = [m for m in mutants if m["outcome"] in RAN or _backward_raised(m)]
    caught = [m for m in ran if _caught(m)]
    passed = oc["pass"] + oc["warning"]  # first-order gradients proved (a warning: second order / ≤1%)
    return {
        "functions": len(functions), "by_design": sum(1 for f in functions if f["by_design"]),
        "missing_dependency": sum(1 for f in functions if not f["by_design"] and f["outcome"] == "env"),
        "correct": len(correct), "function_outcomes": dict(oc),
        "passed": passed, "passed_pct": 100.0 * passed / max(1, len(correct)),
        "with_warning": oc["warning"], "false_alarms": oc["fail"] + oc["error"], "timeouts": oc["timeout"],
        "inconclusive": oc["inconclusive"], "skipped": oc["skipped"],
        "by_design_outcomes": dict(Counter(f["outcome"] for f in functions if f["by_design"])),
        "calls": len(calls), "call_outcomes": dict(Counter(c["outcome"] for c in calls)),
        "mutants": len(mutants), "mutants_ran": len(ran),
        "mutants_ran_pct": 100.0 * len(ran) / max(1, len(mutants)),
        "mutants_caught": len(caught),
        "mutants_caught_pct": 100.0 * len(caught) / max(1, len(ran)),
    }


def _empty_proof(item: dict) -> bool:
    """A ✓ whose result says no Jacobian was compared for some differentiable input, or that the
    compared ones were vacuous (only results that carry a `proof` can say so)."""
    proof = item.get("proof")
    if item["outcome"] not in ("pass", "warning"):
        return False
    if "no checks" in item.get("summary", ""):
        return True
    if proof is None:
        return False
    return not proof.get("inputs")  # no input some output moved with: nothing compared but zeros


def summarise_labelled(rows: list[dict]) -> dict:
    """The new sets' figures: Functions labelled by hand gradchecks, mutants confirmed wrong by them."""
    functions = [f for r in rows for f in r["functions"]]
    correct = [f for f in functions if f.get("label") == "correct"]
    designed = [f for f in functions if f.get("label") == "by_design"]
    unlabelled = [f for f in functions if f.get("label") not in ("correct", "by_design")]
    mutants = [m for r in rows for m in r["mutants"]]
    confirmed = [m for m in mutants if m["outcome"] != "equivalent"]
    caught = [m for m in confirmed if _caught(m)]
    dropped = [m for m in confirmed if m["mutation"] == "drop"]
    oc = Counter(f["outcome"] for f in correct)
    passed = oc["pass"] + oc["warning"]
    calls = [c for r in rows for c in r["calls"]]
    false_ticks = {
        "mutants": sum(1 for m in confirmed if m["outcome"] in ("pass", "warning")),
        "by_design": sum(1 for f in designed if f["outcome"] in ("pass", "warning")),
        "empty_proof": sum(1 for item in functions + confirmed + calls if _empty_proof(item)),
    }
    with_unchecked = [f["target"] for f in correct if f["outcome"] in ("pass", "warning")
                      and (f.get("proof") or {}).get("unchecked")]
    return {
        "functions": len(functions), "correct": len(correct), "by_design": len(designed),
        "unlabelled": len(unlabelled), "function_outcomes": dict(oc),
        "passed": passed, "passed_pct": 100.0 * passed / max(1, len(correct)), "with_warning": oc["warning"],
        "false_alarms": oc["fail"] + oc["error"], "timeouts": oc["timeout"],
        "inconclusive": oc["inconclusive"], "skipped": oc["skipped"] + oc["env"],
        "by_design_outcomes": dict(Counter(f["outcome"] for f in designed)),
        "calls": len(calls), "call_outcomes": dict(Counter(c["outcome"] for c in calls)),
        "mutants": len(mutants), "mutants_confirmed": len(confirmed), "mutants_equivalent": len(mutants) - len(confirmed),
        "mutants_caught": len(caught), "mutants_caught_pct": 100.0 * len(caught) / max(1, len(confirmed)),
        "mutant_outcomes": dict(Counter(m["outcome"] for m in confirmed)),
        "dropped": len(dropped), "dropped_caught": sum(1 for m in dropped if _caught(m)),
        "by_operator": {op: [sum(1 for m in confirmed if m["mutation"] == op and _caught(m)),
                             sum(1 for m in confirmed if m["mutation"] == op)] for op in MUTATIONS},
        "false_ticks": false_ticks,
        "proved_with_unchecked_inputs": with_unchecked,
    }


def print_labelled_report(rows: list[dict]) -> None:
    s = summarise_labelled(rows)
    print(f"{'package':<22} {'Fns':>4} {'ok':>3} {'dsgn':>4} {'?':>3} {'✓':>3} {'⚠':>3} {'✗':>3} {'inc':>4} "
          f"{'skip':>4} {'mut':>4} {'conf':>4} {'caught':>6} {'s':>7}")
    for r in rows:
        fs = r["functions"]
        ok = [f for f in fs if f.get("label") == "correct"]
        f = Counter(x["outcome"] for x in ok)
        conf = [m for m in r["mutants"] if m["outcome"] != "equivalent"]
        print(f"{r['package']:<22} {len(fs):>4} {len(ok):>3} {sum(1 for x in fs if x.get('label') == 'by_design'):>4} "
              f"{sum(1 for x in fs if x.get('label') not in ('correct', 'by_design')):>3} {f['pass']:>3} "
              f"{f['warning']:>3} {f['fail'] + f['error']:>3} {f['inconclusive']:>4} {f['skipped'] + f['env']:>4} "
              f"{len(r['mutants']):>4} {len(conf):>4} {sum(1 for m in conf if _caught(m)):>6} {r['seconds']:>7.1f}")
    print()
    print(f"Functions: {s['functions']}: {s['correct']} correct (hand gradcheck), {s['by_design']} not derivatives "
          f"by design, {s['unlabelled']} without a label (listed below)")
    print(f"  correct proved (first order ✓): {s['passed']} of {s['correct']} ({s['passed_pct']:.0f}%), "
          f"{s['with_warning']} with a ⚠; reported ✗ (false alarms): {s['false_alarms']}; timed out: "
          f"{s['timeouts']}; inconclusive: {s['inconclusive']}; skipped/env: {s['skipped']}")
    print(f"  not derivatives by design, reported as: {s['by_design_outcomes']}")
    print(f"✓ that prove nothing: {s['false_ticks']}")
    print(f"gradcheck calls: {s['calls']}; {s['call_outcomes']}")
    print(f"wrong-backward mutants: {s['mutants']}, confirmed wrong by hand {s['mutants_confirmed']} "
          f"({s['mutants_equivalent']} equivalent or unreached); caught {s['mutants_caught']} "
          f"({s['mutants_caught_pct']:.0f}%); outcomes {s['mutant_outcomes']}")
    print(f"  by operator (caught/confirmed): {s['by_operator']}; dropped gradients caught: "
          f"{s['dropped_caught']} of {s['dropped']}")
    print("\nFunctions (label, outcome, summary):")
    for r in rows:
        for f in r["functions"]:
            why = f" [{f['by_design'][:60]}]" if f.get("by_design") else ""
            hand = "" if f.get("label") in ("correct", "by_design") else \
                " hand: " + "; ".join(f"{h['status']} {h.get('message', '')[:80]}" for h in f.get("hand", []))
            print(f"  {r['package']}: {f['target']}: {f.get('label')}: {f['outcome']}: {f['summary'][:160]}{why}{hand}")
    print("\nConfirmed mutants not caught:")
    for r in rows:
        for m in r["mutants"]:
            if m["outcome"] != "equivalent" and not _caught(m):
                print(f"  {r['package']}: {m['target']} [{m['mutation']}]: {m['outcome']}: {m['summary'][:160]}")


def print_report(rows: list[dict]) -> None:
    print(f"{'package':<18} {'Functions':>9} {'design':>6} {'env':>4} {'✓':>4} {'⚠':>4} {'✗':>4} {'incon':>6} "
          f"{'skip':>5} {'calls':>6} {'✓':>4} {'✗':>4} {'mutants':>8} {'ran':>4} {'caught':>7} {'s':>6}")
    for r in rows:
        fs = r["functions"]
        f = Counter(x["outcome"] for x in fs if not x["by_design"])
        c = Counter(x["outcome"] for x in r["calls"])
        ran = [m for m in r["mutants"] if m["outcome"] in RAN or _backward_raised(m)]
        print(f"{r['package']:<18} {len(fs):>9} {sum(1 for x in fs if x['by_design']):>6} {f['env']:>4} "
              f"{f['pass']:>4} {f['warning']:>4} {f['fail'] + f['error']:>4} {f['inconclusive']:>6} "
              f"{f['skipped']:>5} {sum(c.values()):>6} {c['pass'] + c['warning']:>4} {c['fail'] + c['error']:>4} "
              f"{len(r['mutants']):>8} {len(ran):>4} {sum(1 for m in ran if _caught(m)):>7} "
              f"{r['seconds']:>6.1f}")
    s = summarise(rows)
    print()
    print(f"Functions: {s['functions']} ({s['by_design']} not derivatives by design, {s['missing_dependency']} "
          f"need a module the run interpreter lacks); correct and runnable here: {s['correct']}")
    print(f"  proved (first order ✓): {s['passed']} ({s['passed_pct']:.0f}%), of which {s['with_warning']} with a "
          f"⚠ warning; reported ✗ (false alarms): {s['false_alarms']}; timed out: {s['timeouts']}; "
          f"inconclusive: {s['inconclusive']}; skipped: {s['skipped']}")
    print(f"  not derivatives by design, reported as: {s['by_design_outcomes']}")
    print(f"gradcheck calls: {s['calls']}; {s['call_outcomes']}")
    print(f"wrong-backward mutants: {s['mutants']}; could run {s['mutants_ran']} ({s['mutants_ran_pct']:.0f}%); "
          f"caught {s['mutants_caught']} of those ({s['mutants_caught_pct']:.0f}%)")
    print("\nFunctions not proved:")
    for r in rows:
        for f in r["functions"]:
            if f["outcome"] != "pass":
                tag = f" [by design: {f['by_design']}]" if f["by_design"] else ""
                print(f"  {r['package']}: {f['target']}: {f['outcome']}: {f['summary'][:200]}{tag}")
    print("\ngradcheck calls not passed:")
    for r in rows:
        for c in r["calls"]:
            if c["outcome"] != "pass":
                print(f"  {r['package']}: {c['target']}: {c['outcome']}: {c['summary'][:200]}")
    print("\nMutants not caught:")
    for r in rows:
        for m in r["mutants"]:
            if not _caught(m):
                print(f"  {r['package']}: {m['target']} [{m['mutation']}]: {m['outcome']}: {m['summary'][:160]}")


def compare(rows: list[dict], before: list[dict]) -> None:
    """Outcomes of the same correct, runnable Functions and of the same mutants, before and now."""
    def key(package, item):
        return (package, item["target"], item.get("mutation"))

    old = {key(r["package"], f): f["outcome"] for r in before for f in r["functions"] + r["mutants"] + r["calls"]}
    correct = [(r["package"], f) for r in rows for f in r["functions"]
               if not f["by_design"] and f["outcome"] not in ("env", "abstract")]
    mutants = [(r["package"], m) for r in rows for m in r["mutants"]]
    calls = [(r["package"], c) for r in rows for c in r["calls"]]
    print("\nSame targets, before -> now:")
    for label, items in (("correct Functions", correct), ("gradcheck calls", calls), ("mutants", mutants)):
        was = Counter(old.get(key(p, f), "missing") for p, f in items)
        now = Counter(f["outcome"] for _p, f in items)
        print(f"  {label} ({len(items)}): before {dict(was)}; now {dict(now)}")


def main(argv: list[str] | None = None) -> int:
    global NOT_A_DERIVATIVE, HAND_OF_SET
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=sorted(SETS), default="old",
                        help="old: the packages used so far; tune / heldout: issue 23's new packages (labelled "
                             "and their mutants confirmed by hand gradchecks)")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/gradlint-corpus"))
    parser.add_argument("--only", default="", help="comma-separated package names")
    parser.add_argument("--no-mutants", action="store_true")
    parser.add_argument("--mutations", default=None,
                        help="comma-separated operators (default: scale,negate,swap,zero for old, all for the "
                             "new sets: " + ",".join(MUTATIONS) + ")")
    parser.add_argument("--hand-only", action="store_true",
                        help="only the hand gradchecks: label every Function and confirm its mutants, without "
                             "running gradlint (how the labels are made; prints them)")
    parser.add_argument("--out", type=Path, default=None, help="write all rows as JSON here")
    parser.add_argument("--gradlint", type=Path, default=Path(sys.executable).parent / "gradlint",
                        help="the gradlint command to measure (default: this venv's)")
    parser.add_argument("--tag", default="current", help="scratch checkouts go to CACHE/runner/TAG")
    parser.add_argument("--report", type=Path, nargs="+", default=None, metavar="JSON",
                        help="print the report of earlier --out files instead of running (a later file's "
                             "package replaces an earlier one's)")
    parser.add_argument("--compare", type=Path, default=None, metavar="JSON",
                        help="an earlier --out file (e.g. of the previous version, --gradlint ... --tag "
                             "baseline): the same targets' outcomes then and now")
    args = parser.parse_args(argv)
    chosen = SETS[args.set]
    NOT_A_DERIVATIVE = dict(chosen["not_a_derivative"])
    HAND_OF_SET = HAND.get(args.set, {})
    packages = chosen["packages"]
    labelled = bool(HAND_OF_SET)
    report = print_labelled_report if labelled else print_report
    summary = summarise_labelled if labelled else summarise
    if args.report:
        merged: dict[str, dict] = {}
        for path in args.report:
            for row in json.loads(path.read_text())["rows"]:
                merged[row["package"]] = row
        rows = [merged[p[0]] for p in packages if p[0] in merged]
        for row in rows:  # NOT_A_DERIVATIVE may have grown since: judge again
            for f in row["functions"]:
                f["by_design"] = by_design(f["target"])
                if f["by_design"]:
                    f["label"] = "by_design"
            designed = {f["target"] for f in row["functions"] if f["by_design"]}
            row["mutants"] = [m for m in row["mutants"] if m["target"] not in designed]
        report(rows)
        if args.compare:
            compare(rows, json.loads(args.compare.read_text())["rows"])
        if args.out:
            args.out.write_text(json.dumps({"rows": rows, "summary": summary(rows)}, indent=2))
        return 0
    if args.no_mutants:
        mutations: tuple[str, ...] = ()
    elif args.mutations:
        mutations = tuple(m.strip() for m in args.mutations.split(",") if m.strip())
    else:
        mutations = MUTATIONS if labelled else ("scale", "negate", "swap", "zero")
    wanted = {n.strip().lower() for n in args.only.split(",") if n.strip()}
    selected = [p for p in packages if not wanted or p[0].lower() in wanted]
    python = run_venv(args.cache, chosen["base"], [req for p in packages for req in p[2]])
    log(f"load: {os.getloadavg()}")
    if args.hand_only:
        for name, version, _extra in selected:
            hand_only(args.cache, name, version, python, mutations, args.tag)
        return 0
    rows = []
    for name, version, _extra in selected:
        log(f"running {name}=={version} ...")
        try:
            rows.append(measure_package(args.cache, name, version, python, args.gradlint, mutations,
                                        args.tag, HAND_OF_SET))
        except Exception as error:  # report and go on
            log(f"FAILED {name}=={version}: {error}")
    report(rows)
    if args.compare:
        compare(rows, json.loads(args.compare.read_text())["rows"])
    log(f"load: {os.getloadavg()}")
    if args.out:
        args.out.write_text(json.dumps({"rows": rows, "summary": summary(rows), "load": os.getloadavg()},
                                       indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
