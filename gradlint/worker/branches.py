"""Branches of backward the checked inputs never took, and inputs that take them.

A gradcheck proves backward at the inputs it ran on, along the lines those inputs reached. A
backward (or a helper of its module it calls) that branches on its inputs (``if x > (a + 1) /
(a + b + 2):`` a symmetry relation, a series far from zero, a clamp's other side) and a wrong
gradient in the arm no input reached passes every check. So, after the checks pass:

- ``untaken``: the arms of ``if`` statements in the Function's own file whose test ran while
  backward ran and whose arm never did (line tracing of that file's frames only);
- ``other_inputs``: other inputs (the recipe's other value domains, inputs scaled far and near,
  other draws, an input with one more dimension: first when the arm's test reads a rank) are
  traced in turn, and those that take an arm not taken before are gradchecked
  (``gradcheck (branch at line N)``); a decisive failure there is a wrong gradient in that arm,
  an indecisive one a note. The report lists the arms no input took
  (``result["untaken_branches"]``), so a ✓ says what it did not cover.
"""

import ast
import sys

import torch

from .explore import decisive, finite_outputs, prefixed, scaled, undecided
from .proof import is_first_order
from .subject import prepare
from .tensors import as_tuple, is_tensor

MAX_SOURCES = 8
MAX_CHECKS = 3


def untaken(subject, path, arms):
    """The arms (first lines) in ``arms`` whose ``if`` ran and whose body did not, when backward
    runs once at the subject's inputs; None when backward could not run."""
    lines = trace_backward(subject, path)
    if lines is None:
        return None
    return [(test, first) for test, first in arms if test in lines and first not in lines]


def arms_of(path):
    """[(line of an ``if``'s test, first line of one of its arms)] for every ``if`` in the file
    inside a function (both arms; an ``elif`` is an arm's ``if`` of its own)."""
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, ValueError):
        return []
    out = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.If):
                out.append((node.test.lineno, node.body[0].lineno))
                if node.orelse:
                    out.append((node.test.lineno, node.orelse[0].lineno))
    return sorted(set(out))


def trace_backward(subject, path, raised=None):
    """The lines of ``path`` that ran while backward ran once (forward untraced); None when backward
    raised, unless ``raised`` (a list) is given: then the lines that ran before, and the error in it."""
    inputs = subject.fresh()
    outs = as_tuple(subject.call(inputs))
    diff = [o for o in outs if is_tensor(o) and o.requires_grad and o.is_floating_point()]
    wrt = [inputs[j] for j in subject.grad_pos]
    if not diff or not wrt:
        return None
    gen = torch.Generator().manual_seed(int(subject.opts["seed"]) + 23)
    grads = [torch.randn(o.shape, generator=gen, dtype=o.dtype) for o in diff]
    seen = set()

    def local(frame, event, arg):
        if event == "line":
            seen.add(frame.f_lineno)
        return local

    def on_call(frame, event, arg):
        return local if frame.f_code.co_filename == path else None

    previous = sys.gettrace()
    sys.settrace(on_call)
    try:
        torch.autograd.grad(diff, wrt, grads, allow_unused=True)
    except Exception as e:  # noqa: BLE001 - backward raising here is the checks' business
        if raised is None:
            return None
        raised.append(e)
    finally:
        sys.settrace(previous)
    return seen


def sources(job, subject, loaded, rank_first=False):
    """[(kind, seed -> Loaded)]: the recipe's other value domains, the inputs scaled far, near and
    negated (with noise), other draws; and each differentiated input with one more dimension
    (a second column, a batch of two: several right-hand sides), first when an untaken arm's test
    reads a rank or a shape (``if grad.dim() == 2:``), else last."""
    out = []
    ranks = []
    floating = [i for i, v in enumerate(subject.raw or ()) if is_tensor(v) and v.is_floating_point()
                and i in subject.grad_pos][:2]
    for i in floating:
        for leading in (False, True):
            ranks.append(("input %d with a %s dimension of 2" % (i, "leading" if leading else "trailing"),
                          lambda s, i=i, leading=leading: loaded.with_inputs(extra_dim(subject.raw, i, leading, s))))
    if rank_first:
        out += ranks
    if job.recipe is not None:
        out += [("domain %s" % d, lambda s, d=d: loaded.with_inputs(job.recipe.with_domain(d).make(s)))
                for d in ("positive", "small", "unit", "signed") if d != job.recipe.domain]
    if subject.raw:
        out += [("scaled ×%g" % f, lambda s, f=f: loaded.with_inputs(scaled(subject.raw, f, s)))
                for f in (4.0, 0.25, -1.0)]
    if job.redraw is not None:
        out += [("draw", job.redraw)] * 2
    if not rank_first:
        out += ranks
    return out


def extra_dim(raw, i, leading, seed):
    """``raw`` with input ``i`` stacked with a second, different copy along a new dimension."""
    gen = torch.Generator().manual_seed(seed)
    x = raw[i].detach()
    second = x * 0.5 + 0.1 * torch.randn(x.shape, generator=gen, dtype=torch.float64).to(x.dtype)
    out = list(raw)
    out[i] = torch.stack([x, second], dim=0 if leading else -1).requires_grad_(raw[i].requires_grad)
    return tuple(out)


def reads_rank(path, missing):
    """Does the test of an untaken arm read a rank or a shape?"""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError):
        return False
    words = ("dim()", "ndim", "ndimension()", ".shape", "size(", "len(")
    return any(0 < test <= len(lines) and any(w in lines[test - 1] for w in words) for test, _first in missing)


def other_inputs(job, subject, loaded):
    """See the module docstring."""
    first = next((c for c in job.checks if c["name"] == "gradcheck"), None)
    path = _file_of(loaded.fclass)
    if first is None or first["status"] != "pass" or job.kind == "call_site" or path is None \
            or any(c["status"] in ("fail", "error") and is_first_order(c["name"]) for c in job.checks) \
            or not job.time_left(10.0):
        return
    arms = arms_of(path)
    if not arms:
        return
    try:
        missing = untaken(subject, path, arms)
    except Exception:  # noqa: BLE001 - forward raised: the checks said so
        return
    if not missing:
        return
    checked = 0
    for k, (kind, make) in enumerate(sources(job, subject, loaded, reads_rank(path, missing))[:MAX_SOURCES]):
        if not missing or checked >= MAX_CHECKS or not job.time_left(8.0):
            break
        try:
            drawn = make(job.opts["seed"] + 40 + k)
            other = prepare(drawn.fn, drawn.fclass, drawn.names, drawn.raw_inputs, job.source, job.opts,
                            job.reporter, grad_outputs=drawn.grad_outputs)
            other.captured = subject.captured
            other.on_failure = job.provisional
            if subject.reseeded:
                other.reseed()
            if job.run_check("forward", other, record=False)["status"] != "pass" or not finite_outputs(other):
                continue
            raised = []
            lines = trace_backward(other, path, raised)
        except Exception:  # noqa: BLE001 - inputs forward or backward reject: the next source
            continue
        if lines is None:
            continue
        taken = [arm for arm in missing if arm[1] in lines]
        if not taken:
            continue
        checked += 1
        missing = [arm for arm in missing if arm not in taken]
        label = "gradcheck (branch at line %d)" % taken[0][1]
        rec = job.run_check("gradcheck", other, label=label)
        rec["details"]["draw"] = {"seed": job.opts["seed"] + 40 + k, "inputs": other.infos, "kind": kind}
        # backward raising in the arm it has for these inputs (forward took them: a second column of
        # right-hand sides its own code handles) is its error; elsewhere, an input it may not be meant for
        own_arm = rec["status"] == "error" and raised and rec.get("verdict") == "exception"
        if rec["status"] == "fail" and not decisive(rec) or rec["status"] == "error" and not own_arm:
            undecided(job, rec, "where backward takes its branch at line %d" % taken[0][1])
            continue
        prefixed(rec, "where backward takes its branch at line %d (%s): " % (taken[0][1], kind))
        if rec["status"] != "pass":
            return
    if missing:
        job.result["untaken_branches"] = [{"file": path, "line": first_line} for _test, first_line in missing]
        job.result["notes"].append(_untaken_note(missing, path))


def _untaken_note(missing, path):
    return "no input checked took backward's branch%s at line%s %s of %s" % (
        "es" if len(missing) > 1 else "", "s" if len(missing) > 1 else "",
        ", ".join(str(a[1]) for a in missing[:6]), path.rsplit("/", 1)[-1])


def taken_in_modes(job, loaded, trials):
    """The arms a passing mode's run took (``norm='ortho'``) are covered: they leave the untaken
    list and its note."""
    untaken_list = job.result.get("untaken_branches")
    path = _file_of(loaded.fclass)
    if not untaken_list or not trials or path is None:
        return
    arms = [(None, b["line"]) for b in untaken_list]
    old_note = _untaken_note(arms, path)
    for trial in trials:
        try:
            lines = trace_backward(trial, path)
        except Exception:  # noqa: BLE001 - the user's backward: it passed its check already
            continue
        arms = [a for a in arms if lines is None or a[1] not in lines]
    if len(arms) == len(untaken_list):
        return
    notes = job.result["notes"]
    if old_note in notes:
        notes.remove(old_note)
    if arms:
        notes.append(_untaken_note(arms, path))
        job.result["untaken_branches"] = [{"file": path, "line": a[1]} for a in arms]
    else:
        job.result.pop("untaken_branches", None)


def _file_of(fclass):
    backward = getattr(fclass, "backward", None) if fclass is not None else None
    code = getattr(backward, "__code__", None)
    return code.co_filename if code is not None else None

