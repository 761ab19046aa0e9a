"""Where a run looks beyond its first inputs before it concludes.

- ``callers_instead``: synthesized inputs that forward or backward raise on, or on which nothing
  moves, give way to the inputs the project's own code passes (its callers, then its tests);
- ``refined``: a gradcheck that fails on a Function iterating an approximation (a loop bound, a
  tolerance) is tried with more iterations or a tighter tolerance: at the inputs' own setting the
  output may resolve its inputs only to the approximation's resolution;
- ``finer_step``: a gradcheck that fails by a little (a factor near 1, small relative errors) is tried
  with a 10× smaller finite-difference step: where forward curves sharply on the scale of the default
  step, the central difference is what is wrong (its truncation error), not backward;
- ``more_inputs``: an input no output moved with on any draw is tried on other inputs (other draws,
  value domains) before the run says its Jacobian was only checked where it is zero;
- ``tie_draws``: values with ties and exact equalities between inputs (kinks named as such);
- ``other_modes``: each value of a branch-picking parameter the code names (a mode, an order, a
  reduction, a flag), one parameter at a time; the report lists the modes checked.

Each step records its checks on the job (``job.checks``) and respects its time budget.
"""

import torch

from .gradchecks import APPROXIMATE_SCALE
from .inputs import params as P
from .links import same_links
from .proof import gather, is_first_order, responses
from .subject import prepare
from .tensors import as_tuple, away_from_zero, is_tensor
from .through_forward import wrapping

MAX_MODES = 6


def callers_instead(job, subject, loader, loaded):
    """Synthesized inputs that forward or backward raise on, or on which nothing moves: the
    inputs the project's own code passes (its callers, then its tests) are tried, and used from
    then on when they run."""
    if job.source != "synthesized" or loaded.fclass is None or not job.time_left(10.0):
        return subject
    bad = next((c for c in job.checks if c["status"] == "error" and c["name"] != "forward_ad"), None)
    vacuous = _nothing_moves(job)
    dropped = _only_dropped(job)
    flat = _flat_here(job)
    if bad is None and not vacuous and not dropped and not flat:
        return subject
    tried = []
    try:
        borrowed = job.borrow(loaded, tried, tests_first=bool(flat))
        trial = job.prepare_subject(loaded.with_inputs(borrowed.make(job.opts["seed"])), loader) if borrowed else None
    except Exception:  # noqa: BLE001 - a caller that does not reach it again
        trial = None
    if trial is None or job.run_check("forward", trial, record=False)["status"] != "pass":
        return subject
    only_flat = flat and not (bad or vacuous or dropped)
    if only_flat and not _moves_at_its_shapes(trial, flat, job.opts["seed"]):
        return subject  # flat at made-up values of the project's shapes too: a finding, not unfit inputs
    why = "%s raised on them" % bad["name"].replace("_", " ") if bad is not None else \
        "no output moved with them" if vacuous else \
        "no output moved with `%s` on them" % flat if flat else \
        "backward returns None for %s, which the project may pass as a constant" % dropped
    job.result["notes"].append("synthesized inputs did not fit (%s): checked on inputs captured from %s, "
                                "which calls %s.apply" % (why, borrowed.where, loaded.fclass.__name__))
    job.checks = []
    job.source = "caller"
    job.recipe = None
    job.borrowed = borrowed
    seed = job.opts["seed"]
    job.redraw = lambda s: loaded.with_inputs(borrowed.make(s))
    subject = job.prepare_subject(loaded.with_inputs(borrowed.make(seed)), loader)
    job.result["synthesis"] = borrowed.info(seed)
    job.run_checks(subject)
    return subject


def refined(job, subject, loader, loaded):
    """gradcheck failed, and forward iterates an approximation whose extent an argument sets (a
    loop's bound ``n``, a tolerance ``tol`` a loop stops at: ``param_usage.Usage`` finds them). At
    the inputs' own setting the output may follow its inputs only to the approximation's
    resolution (24 bisection steps resolve a root to 2⁻²⁴ of the bracket, about gradcheck's own
    step), so a backward that is the exact derivative of the limit disagrees with finite
    differences, and an input the limit does not depend on still moves the output a little. The
    check is tried again with more iterations (at least 2×, +36) or a tolerance 10⁶× tighter;
    when gradcheck passes there, the run goes on with that setting (its checks are the run's),
    with a note saying what failed at the first one. A wrong backward fails at any setting."""
    first = next((c for c in job.checks if c["name"] == "gradcheck"), None)
    if first is None or first["status"] != "fail" or job.kind == "call_site" or not subject.raw \
            or not job.time_left(10.0):
        return subject
    params = job.recipe.params if job.recipe is not None else P.infer(loaded.fn, loaded.fclass)
    changes = refinements(params, subject.raw)
    if not changes:
        return subject
    raw = _with_changes(subject.raw, changes)
    try:
        trial = job.prepare_subject(loaded.with_inputs(raw), loader)
    except Exception:  # noqa: BLE001 - a setting forward rejects
        return subject
    if subject.reseeded:
        trial.reseed()
    if job.run_check("forward", trial, record=False)["status"] != "pass":
        return subject
    rec = job.run_check("gradcheck", trial, record=False)
    finer = _finer_pass(job, trial, rec)
    if finer is not None:
        rec = finer
    if rec["status"] not in ("pass", "fail"):
        return subject
    shown = ", ".join("%s=%r" % (name, new) for name, _old, new in changes.values())
    was = ", ".join("%s=%r" % (name, old) for name, old, _new in changes.values())
    failed = strip_mark(first.get("message") or first.get("summary") or "")
    if rec["status"] == "pass":
        job.result["notes"].append("forward is an iterative approximation: at %s gradcheck fails (%s); with %s it "
                                   "passes, so the run checks with %s (backward is the derivative of the converged "
                                   "result)" % (was, failed, shown, shown))
    else:  # reported at the refined setting, where the approximation does not blur the failure
        job.result["notes"].append("gradcheck fails with %s too (forward's approximation refined from %s): not an "
                                   "approximation error; reported with %s" % (shown, was, shown))
    job.result["refined"] = {name: {"from": repr(old), "to": repr(new)} for name, old, new in changes.values()}
    if job.recipe is not None:
        job.recipe.overrides.update((pos, new) for pos, (_name, _old, new) in changes.items())
    if job.redraw is not None:
        redraw = job.redraw
        job.redraw = lambda s: loaded.with_inputs(_with_changes(redraw(s).raw_inputs, changes))
    job.checks = []
    job.run_checks(trial)
    return trial


def finer_step(job, subject):
    """gradcheck failed by a little (``truncation_like``) on float64 inputs, and the user chose no
    step: the check is tried with a 10× smaller step (eps). Finite differences then have a 100×
    smaller truncation error and the same backward; if gradcheck passes, the run goes on with that
    step, with a note. A wrong backward fails at every step (its error does not shrink with eps)."""
    first = next((c for c in job.checks if c["name"] == "gradcheck"), None)
    if first is None or job.kind == "call_site" or job.result.get("finer_step"):
        return subject
    if _finer_pass(job, subject, first) is None:
        return subject
    job.checks = []
    job.run_checks(subject)
    return subject


def _finer_pass(job, subject, rec):
    """A passing gradcheck record at a 10× smaller step when ``rec`` failed like a truncation error
    of the finite differences (and the run then uses that step: ``job.opts["eps"]``), else None."""
    if rec["status"] != "fail" or not truncation_like(rec) or "eps" in job.explicit or not job.time_left(8.0):
        return None
    if any(str(subject.base[j].dtype) not in ("torch.float64", "torch.complex128") for j in subject.grad_pos):
        return None
    step = float(job.opts["eps"])
    job.opts["eps"] = step / 10
    finer = job.run_check("gradcheck", subject, record=False)
    if finer["status"] != "pass":
        job.opts["eps"] = step
        return None
    job.result["notes"].append("gradcheck fails at the finite-difference step eps=%g (%s) and passes at eps=%g: "
                               "forward curves too sharply at these inputs for the larger step (the central "
                               "difference's own error), so the run checks with eps=%g"
                               % (step, strip_mark(rec.get("message") or ""), step / 10, step / 10))
    job.result["finer_step"] = {"from": step, "to": step / 10}
    return finer


def truncation_like(rec):
    """Does a failing gradcheck look like a finite difference's truncation error rather than a
    wrong formula: no pattern, or a constant factor within 10% of 1, and the worst element off by
    less than half?"""
    details = rec.get("details") or {}
    pattern = details.get("pattern") or {}
    if pattern.get("kind") not in (None, "scale") or any(a.get("kind") for a in details.get("also") or []):
        return False
    if pattern.get("kind") == "scale" and abs(float(pattern.get("factor", 0.0)) - 1.0) > 0.1:
        return False
    worst = details.get("worst_relative_error")
    return worst is None or worst < 0.5


def refinements(params, raw):
    """{position: (name, value, refined value)} for the arguments that set an approximation's extent:
    an iteration count (an int ≥ 1) grows to max(2n, n + 36), a tolerance (a float in (0, 0.1))
    shrinks 10⁶× (not below 1e-15)."""
    positional = [p for p in params or [] if not p.keyword_only]
    changes = {}
    for pos, p in enumerate(positional):
        if pos >= len(raw) or not getattr(p, "refines", False):
            continue
        value = raw[pos]
        if isinstance(value, bool):
            continue
        if isinstance(value, int) and 1 <= value <= 100000:
            changes[pos] = (p.name, value, max(2 * value, value + 36))
        elif isinstance(value, float) and 0.0 < value < 0.1:
            changes[pos] = (p.name, value, max(value * 1e-6, 1e-15))
    return changes


def _with_changes(raw, changes):
    raw = list(raw)
    for pos, (_name, _old, new) in changes.items():
        if pos < len(raw):
            raw[pos] = new
    return tuple(raw)


def strip_mark(text):
    text = text.split("\n")[0]
    return text[2:] if text[:2] in ("✗ ", "⚠ ") else text


def _only_dropped(job):
    """The inputs a failed gradcheck on synthesized inputs says backward returns None for, when
    that is all it says (the primary failure and every other one a dropped gradient): the inputs a
    Function's callers may pass as constants of their own (a wavelet's filter bank in a buffer).
    Their inputs decide then (``as_inputs``: a constant of the caller's stays undifferentiated; one
    the caller differentiates fails the same way). None otherwise."""
    first = next((c for c in job.checks if c["name"] == "gradcheck"), None)
    if first is None or first["status"] != "fail":
        return None
    details = first.get("details") or {}
    found = [details.get("pattern") or {}] + list(details.get("also") or ())
    if any(p.get("kind") != "dropped" for p in found):
        return None
    return ", ".join("`%s`" % p["input"] for p in found)


def _flat_here(job):
    """The input a first gradcheck on synthesized inputs found no output moving with, while
    backward returns a gradient for it (``surrogates``: "surrogate", "estimator"): made-up inputs
    can put a Function where it is flat (a transport plan its marginals fix: a vector where a cost
    matrix is meant), so the project's own inputs decide before it is called an estimator, when
    made-up values at their shapes move the output (``_moves_at_its_shapes``). A straight-through
    estimator or a hook read from the code is one on any inputs, and is left as it is."""
    first = next((c for c in job.checks if c["name"] == "gradcheck"), None)
    details = (first or {}).get("details") or {}
    if first is None or first.get("verdict") != "surrogate_gradient" or \
            details.get("surrogate") not in ("surrogate", "estimator"):
        return None
    return details.get("surrogate_input") or None


def _moves_at_its_shapes(trial, name, seed):
    """Does some output move with input ``name`` at the project's shapes (``trial``) when that
    input gets made-up values? Then the made-up *shapes* put the Function where it is flat (a
    transport plan's cost made up as a vector, which the potentials absorb), and the project's
    inputs decide. If it is flat there too (a hinge the made-up values all fall below), the flat
    region is the Function's own and the finding on made-up inputs stays."""
    if name not in trial.in_names:
        return False
    j = trial.in_names.index(name)
    inputs = list(trial.fresh())
    x = inputs[j]
    if not is_tensor(x) or not x.is_floating_point() or x.layout != torch.strided:
        return False
    made_up = away_from_zero(tuple(x.shape), torch.Generator().manual_seed(seed), dtype=x.dtype)
    inputs[j] = made_up.requires_grad_(x.requires_grad)
    try:
        with torch.no_grad():
            trial.call([v.detach().clone() if is_tensor(v) else v for v in inputs])
        return _moves_near(trial, inputs, j)
    except Exception:  # noqa: BLE001 - forward rejects made-up values there: nothing shown
        return False


def _nothing_moves(job):
    first = next((c for c in job.checks if c["name"] == "gradcheck"), None)
    return first is not None and first["status"] == "pass" and \
        not any((first["details"].get("responses") or {}).values())

def more_inputs(job, subject, loader, loaded):
    """gradcheck passed, but some checked input moved no output on any draw: its Jacobian was
    compared only where it is zero. Other inputs are tried (more draws of the same kind, other
    value domains, the project's own callers) before the run says so; a failure there is a
    finding the earlier draws could not see."""
    first = next((c for c in job.checks if c["name"] == "gradcheck"), None)
    if first is None or first["status"] != "pass" or any(c["status"] in ("fail", "error") for c in job.checks):
        return
    grad_names = [subject.in_names[j] for j in subject.grad_pos]
    sources = []
    if job.recipe is not None:
        sources += [("draw", lambda s, d=d: loaded.with_inputs(job.recipe.with_domain(d).make(s)))
                    for d in ("small", "positive", "unit") if d != job.recipe.domain]
    if subject.raw:  # far from the first inputs: a threshold, a grid's far end
        sources.append(("far", lambda s: loaded.with_inputs(scaled(subject.raw, 6.0, s))))
    if job.redraw is not None:
        sources += [("draw", job.redraw)] * 2
    for k, (kind, make) in enumerate(sources[:6]):
        proof = gather(job.checks, grad_names, [])
        if not proof["zero"] or not job.time_left(5.0):
            return
        try:
            drawn = make(job.opts["seed"] + 10 + k)
            other = prepare(drawn.fn, drawn.fclass, drawn.names, drawn.raw_inputs, job.source, job.opts,
                            job.reporter, grad_outputs=drawn.grad_outputs)
        except Exception:  # noqa: BLE001 - inputs forward rejects: the next source
            continue
        other.captured = subject.captured
        other.on_failure = job.provisional
        if job.structure:
            keep_structure(other, *job.structure)
        if subject.reseeded:
            other.reseed()
        if job.run_check("forward", other, record=False)["status"] != "pass" or not finite_outputs(other):
            continue
        moved = responses(other)
        if not any(moved.get(name) for name in proof["zero"]):
            continue  # these inputs do not show it either
        rec = job.run_check("gradcheck", other, label="gradcheck (other inputs %d)" % (k + 1))
        rec["details"]["draw"] = {"seed": job.opts["seed"] + 10 + k, "inputs": other.infos}
        if rec["status"] == "fail" and not decisive(rec) or rec["status"] == "error":
            undecided(job, rec, "on other inputs (%s)" % kind)
            continue
        if rec["status"] != "pass" or not is_first_order(rec["name"]):
            return
    proof = gather(job.checks, grad_names, [])
    if proof["zero"] and proof["inputs"]:
        job.result["depends_elsewhere"] = [n for n in proof["zero"] if _depends(subject, subject.in_names.index(n))]


def scaled(raw, factor, seed):
    gen = torch.Generator().manual_seed(seed)
    out = []
    for v in raw:
        if is_tensor(v) and v.is_floating_point() and v.layout == torch.strided:
            noise = torch.randn(v.shape, generator=gen, dtype=v.dtype)
            v = same_links((v.detach() * factor + noise).requires_grad_(v.requires_grad), v)
        out.append(v)
    return tuple(out)


def _depends(subject, j):
    """Does some output move when input j alone moves far (×6, shifted), though no output moved
    with it at any input checked, and move with it there? Then its Jacobian was compared only
    where it is zero. An output that only jumps (a root finder's initial guess picking another
    root, an argmax) and is flat again where it lands has a zero derivative wherever it has one:
    the zero compared is the whole truth."""
    base = as_tuple(subject.call(subject.fresh()))
    for factor, shift in ((6.0, 3.0), (-6.0, -3.0), (0.1, 0.0)):
        inputs = list(subject.fresh())
        x = inputs[j]
        if not is_tensor(x) or x.layout != torch.strided:
            return False
        with torch.no_grad():
            x.mul_(factor).add_(shift)
        try:
            moved = as_tuple(subject.call(inputs))
        except Exception:  # noqa: BLE001 - forward rejects these values
            continue
        for a, b in zip(base, moved):
            if is_tensor(a) and is_tensor(b) and a.shape == b.shape and (a.is_floating_point() or a.is_complex()):
                da = a.detach() if a.layout == torch.strided else a.detach().to_dense()
                db = b.detach() if b.layout == torch.strided else b.detach().to_dense()
                d = (da - db).abs()
                if d.numel() and float(torch.where(d.isnan(), torch.zeros_like(d), d).max()) > 1e-9:
                    if _moves_near(subject, inputs, j):
                        return True
                    break  # a jump, flat where it lands: the next far point
    return False


def _moves_near(subject, inputs, j):
    """Does some output move with input j at ``inputs`` (central differences at gradcheck's eps)?"""
    eps = float(subject.opts["eps"])
    gen = torch.Generator().manual_seed(int(subject.opts["seed"]) + 29)
    for _ in range(2):
        plus = [v.detach().clone() if is_tensor(v) else v for v in inputs]
        minus = [v.detach().clone() if is_tensor(v) else v for v in inputs]
        v = torch.randn(tuple(inputs[j].shape), generator=gen, dtype=inputs[j].dtype)
        with torch.no_grad():
            plus[j].add_(eps * v)
            minus[j].sub_(eps * v)
        try:
            a, b = as_tuple(subject.call(plus)), as_tuple(subject.call(minus))
        except Exception:  # noqa: BLE001 - forward rejects these values: taken as moving
            return True
        for ya, yb in zip(a, b):
            if is_tensor(ya) and is_tensor(yb) and ya.shape == yb.shape and (ya.is_floating_point() or ya.is_complex()):
                ya = ya.detach().to_dense() if ya.layout != torch.strided else ya.detach()
                yb = yb.detach().to_dense() if yb.layout != torch.strided else yb.detach()
                d = (ya - yb).abs()
                scale = float(ya.abs().max()) if ya.numel() else 0.0
                if d.numel() and float(torch.where(d.isnan(), torch.zeros_like(d), d).max()) > 1e-12 + 1e-9 * scale:
                    return True
    return False

def tie_draws(job, subject, loader, loaded):
    """Draws that find bugs random values miss: values with ties (rounded to halves: equal
    entries, as a max, a sort or a sparsemax meet them) and, for inputs of one shape, exact
    equalities between inputs. Kept only where forward is finite; a failure at a kink there is
    named as such (a note), any other failure is a wrong gradient these values expose."""
    first = next((c for c in job.checks if c["name"] == "gradcheck"), None)
    if first is None or first["status"] != "pass" or job.kind == "call_site" or not subject.raw:
        return
    raw = list(subject.raw)
    grad = [i for i, v in enumerate(raw) if is_tensor(v) and v.layout == torch.strided
            and v.is_floating_point() and v.requires_grad and v.numel() > 1]
    if not grad:
        return
    tied = list(raw)
    for i in grad:
        v = raw[i].detach()
        r = torch.round(v * 2) / 2
        tied[i] = same_links(torch.where(r == 0, torch.full_like(r, 0.5), r).requires_grad_(True), raw[i])
    trials = [("ties", tied)]
    same = [i for i in grad if tuple(raw[i].shape) == tuple(raw[grad[0]].shape)]
    if len(same) > 1:
        equal = list(raw)
        for i in same[1:]:
            equal[i] = same_links(raw[same[0]].detach().clone().requires_grad_(True), raw[i])
        trials.append(("equal inputs", equal))
    for label, values in trials:
        if not job.time_left(8.0):
            return
        try:
            trial = job.prepare_subject(loaded.with_inputs(tuple(values)), loader)
        except Exception:  # noqa: BLE001 - inputs prepare rejects
            continue
        if subject.reseeded:
            trial.reseed()
        fwd = job.run_check("forward", trial, record=False)
        if fwd["status"] != "pass" or not finite_outputs(trial):
            continue
        rec = job.run_check("gradcheck", trial, label="gradcheck (%s)" % label)
        rec["details"]["draw"] = {"kind": label, "inputs": trial.infos}
        if rec["status"] == "fail" and any(w.get("kink") for w in rec["details"].get("worst") or []):
            rec["verdict"] = "non_differentiable_point"  # at ties: a kink, named, not a wrong gradient
        elif rec["status"] == "fail" and not decisive(rec) or rec["status"] == "error":
            undecided(job, rec, "at %s" % ("inputs with ties" if label == "ties" else label))
        prefixed(rec, "at %s: " % ("inputs with ties" if label == "ties" else label))


def other_modes(job, subject, loader, loaded):
    """A parameter that picks a branch (an interpolation order, a boundary mode, a reduction, a
    flag) is checked in each value the code names, one parameter changed at a time: a wrong
    backward in one mode is found, and the report lists the modes checked."""
    if job.kind == "call_site" or any(c["status"] in ("fail", "error") and c["name"] != "gradgradcheck"
                                      for c in job.checks):
        return  # a second-order failure is a warning: the first-order modes still matter
    params = job.recipe.params if job.recipe is not None else P.infer(loaded.fn, loaded.fclass)
    raw = list(subject.raw or ())
    positional = [p for p in params or [] if not p.keyword_only]
    checked = []
    for pos, p in enumerate(positional):
        if pos >= len(raw) or not p.modes or is_tensor(raw[pos]):
            continue
        current = raw[pos]
        for value in p.modes:
            optional_factor = current is None and isinstance(value, float)  # params.optional_factors
            if value == current or type(value) is not type(current) and not optional_factor and not (
                    isinstance(value, (int, bool)) and isinstance(current, (int, bool))):
                continue
            if len(checked) >= MAX_MODES or not job.time_left(5.0):
                break
            trial_raw = list(raw)
            trial_raw[pos] = value
            label = "gradcheck (mode %s=%r)" % (p.name, value)
            try:
                if job.recipe is not None:
                    values = dict(job.recipe.values, **{p.name: value})
                    recipe = job.recipe.with_shapes(job.recipe.shapes)
                    recipe.values = values
                    made = recipe.make(job.opts["seed"])
                    trial_raw = list(made) if len(made) == len(raw) else trial_raw
                trial = job.prepare_subject(loaded.with_inputs(tuple(trial_raw)), loader)
            except Exception:  # noqa: BLE001 - a mode these inputs do not suit
                continue
            if subject.reseeded:
                trial.reseed()
            if job.run_check("forward", trial, record=False)["status"] != "pass":
                checked.append({"mode": {p.name: repr(value)}, "status": "forward raised"})
                continue
            rec = job.run_check("gradcheck", trial, label=label)
            rec["details"]["mode"] = {p.name: repr(value)}
            if rec["status"] == "fail" and job.recipe is not None:
                structure = _structured_mode(job, recipe, loaded, loader, subject, label)
                if structure is not None:  # the mode's inputs need a structure of their own
                    job.checks.remove(rec)
                    rec = structure
            if rec["status"] == "fail" and decisive(rec):
                near = approximates(subject, trial, rec)
                if near is not None:  # the mode approximates the first mode's result: no proof either way
                    rec["details"]["approximates"] = {"mode": {p.name: repr(current)}, "relative_difference": near}
            if rec["status"] == "fail" and not decisive(rec) or rec["status"] == "error":
                undecided(job, rec, "in mode %s=%r at these inputs" % (p.name, value))
            prefixed(rec, "in mode %s=%r: " % (p.name, value))
            checked.append({"mode": {p.name: repr(value)}, "status": rec["status"]})
            if rec["status"] == "pass":
                job.mode_trials.append(trial)  # the arms its backward took are covered (branches.taken_in_modes)
            if rec["status"] == "fail":
                break
    if checked:
        used = dict((p.name, repr(raw[i])) for i, p in enumerate(positional) if i < len(raw) and p.modes)
        job.result["modes"] = [{"mode": used, "status": "checked first"}] + checked


APPROXIMATION = (1e-9, 1e-3)  # relative differences of two modes' outputs that make one an approximation


def approximates(subject, trial, rec):
    """The relative difference between a mode's outputs and the first mode's, at the inputs and at
    the worst failing element moved by gradcheck's step either way, when it is small but beyond
    round-off (``APPROXIMATION``): the mode computes the same result only approximately (an
    iterative solver stopped at its own tolerance where the first mode factorises). Its finite
    differences then differ from the exact result's derivative by more than gradcheck allows, with
    no bug in backward: measured on torch-sla, SciPy's CG at its default rtol 1e-5 differs from LU by
    about 1e-7 at a moved input, and its finite differences by 16% of the Jacobian's scale. Else None."""
    worst_entry = next(iter((rec.get("details") or {}).get("worst") or []), None)
    if worst_entry is None:
        return None
    j, index = worst_entry["input_position"], tuple(worst_entry["input_index"])
    step = float(subject.opts["eps"])
    worst = 0.0
    for delta in (0.0, step, -step):
        try:
            outs = []
            for s in (subject, trial):
                inputs = s.fresh()
                if delta:
                    with torch.no_grad():
                        inputs[j][index] += delta
                outs.append([o.detach() for o in as_tuple(s.call(inputs)) if is_tensor(o)])
        except Exception:  # noqa: BLE001 - the user's forward: no answer
            return None
        first, other = outs
        if len(first) != len(other) or not first:
            return None
        for a, b in zip(first, other):
            if a.shape != b.shape or not (a.is_floating_point() or a.is_complex()) \
                    or a.layout != torch.strided or b.layout != torch.strided:
                return None
            scale = float(a.abs().max()) if a.numel() else 0.0
            if scale == 0.0 or not bool(torch.isfinite(b).all()):
                return None
            worst = max(worst, float((a - b).abs().max()) / scale)
    return worst if APPROXIMATION[0] < worst < APPROXIMATION[1] else None


def decisive(rec):
    """Is a failure on extra inputs (a mode, ties) a wrong gradient beyond doubt: a named pattern,
    or entries off by half or more? A small disagreement there (an ill-conditioned point, a
    solver's tolerance) is no proof of a bug, nor is a gradient for entries no output moves with
    (a mode reading one triangle of a matrix drawn for another)."""
    details = rec.get("details") or {}
    if rec.get("verdict") == "approximate_gradient" or details.get("close_to_scale"):
        return False  # within a solver's tolerance of the Jacobian's scale, after a strict pass
    if details.get("approximates"):
        return False  # a mode whose outputs approximate the first mode's: its own finite differences differ
    if (details.get("error_to_scale") or float("inf")) <= APPROXIMATE_SCALE:
        return False  # a pattern read from differences this small (a root finder's tolerance) is no proof
    if details.get("ignored_entries_only"):
        return False  # gradients for entries forward ignores at these inputs: the inputs misfit the mode
    if (details.get("pattern") or {}).get("kind") or any(a.get("kind") for a in details.get("also") or []):
        return True
    worst = details.get("worst_relative_error")
    return worst is not None and worst >= 0.5


def undecided(job, rec, where):
    """An indecisive failure on extra inputs: a note, not a verdict."""
    details = rec.get("details") or {}
    if rec["status"] == "error":
        how = "raising an error where the first inputs passed (an error there is no proof of a wrong gradient)"
    elif details.get("approximates"):
        how = ("where forward's outputs differ from those in mode %s by %.1g of their scale (an approximation of "
               "the same result, e.g. an iterative solver stopped at its tolerance: its finite differences are "
               "not the exact result's derivative)"
               % (", ".join("%s=%s" % kv for kv in details["approximates"]["mode"].items()),
                  details["approximates"]["relative_difference"]))
    elif details.get("ignored_entries_only"):
        how = ("only at entries of %s no output moves with here (forward does not read them at these inputs: "
               "they do not fit it)" % details.get("input", "an input"))
    elif (details.get("error_to_scale") or float("inf")) <= APPROXIMATE_SCALE:
        how = ("by at most %.2g%% of the Jacobian's largest entry (a solver's tolerance?)"
               % (100 * details["error_to_scale"]))
    else:
        how = "by little and with no clear pattern"
    job.result["notes"].append("gradcheck fails %s, %s (%s): not counted as a wrong gradient"
                               % (where, how, (rec.get("message") or "").lstrip("✗ ")[:240]))
    rec["status"] = "skipped"
    rec["verdict"] = None
    rec.pop("_outcome", None)


def _structured_mode(job, recipe, loaded, loader, subject, label):
    """A mode that fails on the inputs of the first mode may need inputs of its own structure
    (``upper=True``: an upper-triangular matrix): the passing record on such inputs, or None."""
    for domain, structured in structured_recipes(recipe):
        if not job.time_left(5.0):
            return None
        try:
            trial = job.prepare_subject(loaded.with_inputs(structured.make(job.opts["seed"])), loader)
        except Exception:  # noqa: BLE001 - inputs this mode rejects
            continue
        if subject.reseeded:
            trial.reseed()
        keep_structure(trial, domain, structured.only)
        if job.run_check("forward", trial, record=False)["status"] != "pass":
            continue
        rec = job.run_check("gradcheck", trial, label=label, record=False)
        if rec["status"] == "pass":
            rec["details"]["structure"] = domain
            job.checks.append(rec)
            return rec
    return None


def structured_recipes(recipe):
    """(domain, recipe) for a structured retry: each structure for the first square matrix alone
    (the operator: the others stay general, so their gradients are still checked in full), then
    for every square matrix."""
    squares = recipe.square_names()
    if not squares:
        return []
    from .inputs.synthesis import STRUCTURED

    out = [(domain, recipe.with_domain(domain, only={squares[0]})) for domain in STRUCTURED]
    if len(squares) > 1:
        out += [(domain, recipe.with_domain(domain)) for domain in STRUCTURED]
    return out


def _structured(fn, kinds):
    """``fn`` with each square matrix input given its structure back before the call."""
    def structured(*args):
        args = list(args)
        for j, kind in kinds.items():
            a = args[j]
            args[j] = torch.tril(a) if kind == "tril" else torch.triu(a) if kind == "triu" else \
                (a + a.transpose(-1, -2)) / 2
        return fn(*args)

    return wrapping(structured, fn, lambda inner: _structured(inner, kinds))


def keep_structure(subject, domain, only=None):
    """A structured retry perturbs each entry of a square matrix on its own, which leaves the
    structure: a backward that assumes a symmetric (or lower-triangular) input is then compared
    with a function of entries it never reads. So the checked function gets the structure back
    before the call — A -> (A + Aᵀ)/2, L -> tril(L) — and gradcheck compares the gradient under that
    convention (as torch's own eigh or cholesky backward is checked). Returns what was done, for
    the note ("A symmetrized"), or None."""
    from .inputs.synthesis import structure_by_name

    kinds = {}
    for j in subject.grad_pos:
        x = subject.base[j]
        if only is not None and subject.in_names[j] not in only:
            continue
        if x.dim() >= 2 and x.shape[-1] == x.shape[-2] and x.shape[-1] > 1 and x.layout == torch.strided:
            kind = structure_by_name(subject.in_names[j]) if domain == "by_name" else domain
            kinds[j] = kind if kind in ("tril", "triu") else "symmetric"
    if not kinds:
        return None
    subject.fn = _structured(subject.fn, kinds)
    shown = {"tril": "lower-triangular", "triu": "upper-triangular", "symmetric": "symmetrized"}
    return ", ".join("%s %s" % (subject.in_names[j], shown[kind]) for j, kind in sorted(kinds.items()))


def finite_outputs(subject):
    try:
        outs = as_tuple(subject.call(subject.fresh()))
    except Exception:  # noqa: BLE001 - forward raised here
        return False
    for o in outs:
        if is_tensor(o) and (o.is_floating_point() or o.is_complex()) and o.layout == torch.strided \
                and not bool(torch.isfinite(o.detach()).all()):
            return False
    return True


def prefixed(rec, prefix):
    """A failure (or an error) on extra inputs says which: "✗ in mode order=0: Jacobian mismatch ..."."""
    if rec["status"] not in ("fail", "error"):
        return
    for holder in (rec, getattr(rec.get("_outcome"), "__dict__", {})):
        for key in ("message", "summary"):
            text = holder.get(key)
            if isinstance(text, str) and text[:2] in ("✗ ", "⚠ "):
                holder[key] = text[:2] + prefix + text[2:]
