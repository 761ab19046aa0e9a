"""Hand gradchecks: the ground truth ``runner_accuracy.py`` labels Functions and mutants with.

For each Function of the new sets, ``runner_hand_inputs.py`` writes inputs by hand (read from the
package's docs, tests and callers: shapes, sorted grids, layouts, modes), and this module runs
``torch.autograd.gradcheck`` on them in the run interpreter, with **every floating-point tensor input
requiring grad** (a ``None`` from backward is checked, not trusted), and a check that the outputs move
with each such input (so a pass is not vacuous):

- a Function is **correct** when every hand check passes and is not vacuous (some output moves with
  some checked input);
- a Function is **buggy** when a check marked ``expect: "fail"`` fails (a real bug, with the reason);
- a mutant is **confirmed wrong** when a hand check of the mutant fails or raises in backward.

Each check runs in a fresh interpreter (``python -c``) with a time limit: a hang or a crash marks that
check, not the measurement.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

CHILD = r'''
import importlib, json, os, sys, traceback, warnings
warnings.simplefilter("ignore")
spec = json.loads(sys.stdin.read())
root = spec["root"]
sys.path.insert(0, root)
import torch
torch.manual_seed(0)

def module_name(path):
    path = os.path.abspath(path)
    parts = [os.path.splitext(os.path.basename(path))[0]]
    folder = os.path.dirname(path)
    while os.path.exists(os.path.join(folder, "__init__.py")):
        parts.insert(0, os.path.basename(folder))
        folder = os.path.dirname(folder)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    return ".".join(parts)

def as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)

def moves(fn, inputs, j):
    """Does some output move when input j moves (finite differences)?"""
    base = [o.detach() for o in as_tuple(fn(*inputs)) if isinstance(o, torch.Tensor)]
    x = inputs[j]
    moved = list(inputs)
    with torch.no_grad():
        dense = x.to_dense() if x.layout != torch.strided else x
        step = 1e-4 * (1.0 + dense.abs().max())
        if x.layout == torch.strided:
            moved[j] = (x.detach() + step * torch.linspace(0.3, 1.3, x.numel(), dtype=x.dtype).reshape(x.shape))
        else:
            moved[j] = (x.detach().coalesce() if x.layout == torch.sparse_coo else x.detach())
            vals = moved[j].values()
            vals.add_(step * torch.linspace(0.3, 1.3, vals.numel(), dtype=vals.dtype).reshape(vals.shape))
    after = [o.detach() for o in as_tuple(fn(*moved)) if isinstance(o, torch.Tensor)]
    return any(a.shape == b.shape and bool(((a.to_dense() if a.layout != torch.strided else a)
                                            - (b.to_dense() if b.layout != torch.strided else b)).abs().max() > 0)
               for a, b in zip(base, after))

out = []
for item in spec["items"]:
    rec = {"id": item["id"]}
    try:
        mod = importlib.import_module(module_name(os.path.join(root, item["file"])))
        cls = mod
        for part in item["class"].split("."):
            cls = getattr(cls, part)
        namespace = dict(vars(mod))
        namespace.update(torch=torch, F=torch.nn.functional)
        torch.manual_seed(item.get("seed", 0))  # `fn` and `inputs` may draw the same matrix: same seed
        fn = eval(item["fn"], namespace) if item.get("fn") else cls.apply
        torch.manual_seed(item.get("seed", 0))
        inputs = as_tuple(eval(item["inputs"], namespace))
        keep = item.get("no_grad", [])
        inputs = tuple((v.detach().requires_grad_(j not in keep) if isinstance(v, torch.Tensor)
                        and (v.is_floating_point() or v.is_complex()) else v) for j, v in enumerate(inputs))
        checked = [j for j, v in enumerate(inputs) if isinstance(v, torch.Tensor) and v.requires_grad]
        rec["checked"] = checked
        rec["moves"] = [j for j in checked if moves(fn, inputs, j)]
        options = dict(item.get("options", {}))
        try:
            torch.autograd.gradcheck(fn, inputs, **options)
            rec["status"] = "pass" if rec["moves"] or item.get("expect_flat") else "vacuous"
        except sys.modules["torch.autograd.gradcheck"].GradcheckError as e:
            rec["status"], rec["message"] = "fail", str(e).splitlines()[0][:300]
    except Exception as e:
        tb = traceback.extract_tb(e.__traceback__)
        in_backward = any(f.name in ("backward", "vjp") for f in tb)
        # torch's engine checks what backward returned (a wrong shape or count): backward's doing too
        engine = "Backward returned an invalid gradient" in str(e) or "Mismatch in shape: grad_output" in str(e)
        rec["status"] = "raises_in_backward" if in_backward or engine else "error"
        rec["message"] = ("%s: %s" % (type(e).__name__, e)).splitlines()[0][:300]
    out.append(rec)
print("@@HAND@@" + json.dumps(out))
'''


def run_hand(python: Path, root: Path, items: list[dict], timeout: float = 300.0) -> dict[str, dict]:
    """{item id: result} for hand checks ``items`` (``file`` relative to ``root``), one interpreter each."""
    results: dict[str, dict] = {}
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", OMP_NUM_THREADS="1")
    for item in items:
        spec = json.dumps({"root": str(root), "items": [item]})
        limit = float(item.get("timeout", timeout))
        try:
            proc = subprocess.run([str(python), "-c", CHILD], input=spec, capture_output=True, text=True,
                                  timeout=limit, cwd=root, env=env)
            marker = proc.stdout.rfind("@@HAND@@")
            if marker < 0:
                results[item["id"]] = {"id": item["id"], "status": "crash",
                                       "message": (proc.stderr or proc.stdout)[-300:]}
                continue
            results[item["id"]] = json.loads(proc.stdout[marker + len("@@HAND@@"):])[0]
        except subprocess.TimeoutExpired:
            results[item["id"]] = {"id": item["id"], "status": "timeout", "message": f"over {limit:g} s"}
    return results


WRONG = ("fail", "raises_in_backward")


def label(results: list[dict], specs: list[dict]) -> str:
    """'correct' when every hand check passed (non-vacuously); 'buggy' when a check expected to fail
    (a real bug, said in its ``why``) fails; else what the first other one said."""
    if not results:
        return "unlabelled"
    expected = [spec.get("expect") == "fail" for spec in specs]
    if any(expected):
        bad = WRONG + ("timeout",)  # a backward that never returns is a bug too
        return "buggy" if all(r["status"] in bad for r, e in zip(results, expected) if e) else "hand:no-bug"
    for r in results:
        if r["status"] != "pass":
            return "hand:" + r["status"]
    return "correct"


def confirmed_wrong(results: list[dict]) -> bool:
    return any(r["status"] in WRONG for r in results)


def find_functions(root: Path) -> list[tuple[str, str]]:
    """(file relative to root, class name) of every autograd Function class defined at a module's top
    level (``class X(Function)``, ``class X(torch.autograd.Function)``), read with ast."""
    import ast

    found = []
    for path in sorted(root.rglob("*.py")):
        if any(part in ("tests", "test", "docs", "build") or part.startswith(".") for part in
               path.relative_to(root).parts[:-1]) or path.name.startswith(("test_", "_glmut")):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        body = list(tree.body)
        while body:  # module level, also inside `if`/`try`/`with` blocks (`if torch is None: ... else: class`)
            node = body.pop(0)
            if isinstance(node, (ast.If, ast.Try, ast.With)):
                body[:0] = [n for part in ("body", "orelse", "finalbody") for n in getattr(node, part, [])] + \
                    [n for h in getattr(node, "handlers", []) for n in h.body]
                continue
            if isinstance(node, ast.ClassDef) and any(
                    ast.unparse(b).split(".")[-1] == "Function" and "sympy" not in ast.unparse(b) for b in node.bases):
                found.append((path.relative_to(root).as_posix(), node.name))
    return found


def items_for(target_file: str, class_name: str, specs: list[dict], prefix: str) -> list[dict]:
    return [dict(spec, id=f"{prefix}#{i}", file=target_file, **{"class": class_name})
            for i, spec in enumerate(specs)]


def relative(path: Path, root: Path) -> str:
    return path.resolve().relative_to(root.resolve()).as_posix()
