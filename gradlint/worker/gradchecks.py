"""gradcheck, gradgradcheck and forward-mode AD, with the failure analysed.

torch's GradcheckError names one output and one input; the failure is recomputed in
slow mode (``jacobian``) to find the worst entries, kinks and what pattern the mismatch
has, and reported in one line.
"""

import inspect
import time
import warnings

import torch

from . import directional, narrowing
from .checks import grad_outputs_for
from .introspect import is_once_differentiable
from .jacobian import JacobianAnalysis, parse_gradcheck_message
from .outcome import Outcome
from .patterns import classify
from .proof import responses
from .surrogates import documented_mismatch, surrogate
from .tensors import as_tuple, is_tensor, nan_max, real_numel
from .text import first_line, fmt, idx, scalar_fmt
from .torch_setup import REAL, slow_message_left_out


def torch_kwargs(opts):
    o = opts
    kw = {
        "eps": float(o["eps"]), "atol": float(o["atol"]), "rtol": float(o["rtol"]),
        "nondet_tol": float(o["nondet_tol"]),
        "check_undefined_grad": bool(o["check_undefined_grad"]),
        "check_grad_dtypes": bool(o["check_grad_dtypes"]),
        "check_batched_grad": bool(o["check_batched_grad"]),
    }
    return kw


def modes(opts, outs_real, ins_real):
    fm = opts["fast_mode"]
    if fm == "auto":
        small = outs_real * ins_real <= int(opts["slow_confirm_max_elements"])
        return ["fast", "slow"] if small else ["fast"]
    return ["fast"] if fm else ["slow"]


def check_gradcheck(subject, result):
    fn = subject.fn
    inputs = subject.fresh()
    outs = as_tuple(fn(*inputs))
    out_pos = subject.diff_out or [i for i, o in enumerate(outs) if is_tensor(o) and (o.is_floating_point() or o.is_complex())]
    ins_real = sum(real_numel(inputs[j]) for j in subject.grad_pos)
    outs_real = sum(real_numel(outs[o]) for o in out_pos)
    spec = {
        "fn": fn, "fresh": subject.fresh, "in_positions": subject.grad_pos, "out_positions": out_pos,
        "in_names": subject.in_names, "out_names": subject.out_names, "order": "first",
        "diff_out": subject.diff_out,
    }
    rec = gradcheck_like(subject, spec, modes(subject.opts, outs_real, ins_real), "gradcheck",
                         lambda inp, fast: REAL["gradcheck"](fn, inp, fast_mode=fast,
                                                              raise_exception=True, **torch_kwargs(subject.opts)))
    if rec["status"] == "pass" and not any(m["mode"] == "slow" for m in rec["details"]["modes"]):
        # fast mode only (too large for a full Jacobian): its non-negative probes can cancel
        failed = directional.probe(subject, spec)
        if failed is not None:
            failed["details"]["modes"] = rec["details"]["modes"]
            return failed
        rec["details"]["directional"] = "passed"
    if rec["status"] == "pass":
        # which outputs moved with which inputs here: what this pass proved (none: vacuous)
        rec["details"]["responses"] = responses(subject)
    return rec


def check_gradgradcheck(subject, result):
    fn = subject.fn
    n_in = len(subject.in_names)
    outs = as_tuple(fn(*subject.fresh()))
    douts = [outs[i] for i in subject.diff_out]
    if not douts:
        return {"status": "skipped", "message": "no output requires grad"}
    if subject.go_base is None:
        gen = torch.Generator().manual_seed(subject.opts["seed"] + 11)
        gos_base = tuple(g.requires_grad_(True) for g in grad_outputs_for(douts, gen))
    else:
        gos_base = subject.go_base
    grad_in = list(subject.grad_pos)
    diff_go = [i for i, g in enumerate(gos_base) if is_tensor(g) and g.requires_grad]

    def fresh2():
        ins = subject.fresh()
        g2 = tuple(g.detach().clone().requires_grad_(g.requires_grad) if is_tensor(g) else g for g in gos_base)
        return ins + g2

    def new_func(*args):
        ins = args[:n_in]
        g = args[n_in:]
        o = [x for x in as_tuple(fn(*ins)) if is_tensor(x) and x.requires_grad]
        gi = torch.autograd.grad(o, [ins[j] for j in grad_in], g, create_graph=True, allow_unused=True)
        return tuple(x for x in gi if x is not None)

    # which first-order gradients exist (torch drops the None ones, shifting output numbers)
    probe_in = fresh2()
    o = [x for x in as_tuple(fn(*probe_in[:n_in])) if is_tensor(x) and x.requires_grad]
    gi = torch.autograd.grad(o, [probe_in[j] for j in grad_in], probe_in[n_in:], create_graph=True,
                             allow_unused=True)
    kept = [grad_in[k] for k, x in enumerate(gi) if x is not None]
    out_names2 = ["grad of %s" % subject.in_names[j] for j in kept]
    in_names2 = list(subject.in_names) + ["grad_output %d" % i for i in range(len(gos_base))]
    in_pos2 = list(grad_in) + [n_in + i for i in diff_go]
    out_pos2 = list(range(len(kept)))
    ins_real = sum(real_numel(probe_in[j]) for j in in_pos2)
    outs_real = sum(real_numel(x) for x in gi if x is not None)
    diff_out2 = [k for k, x in enumerate([x for x in gi if x is not None]) if x.requires_grad]
    spec = {
        "fn": new_func, "fresh": fresh2, "in_positions": in_pos2, "out_positions": out_pos2,
        "in_names": in_names2, "out_names": out_names2, "order": "second", "diff_out": diff_out2,
    }
    kw = torch_kwargs(subject.opts)

    def run(inp, fast):
        return REAL["gradgradcheck"](fn, inp[:n_in], inp[n_in:], fast_mode=fast, raise_exception=True, **kw)

    return gradcheck_like(subject, spec, modes(subject.opts, outs_real, ins_real), "gradgradcheck", run)


def check_forward_ad(subject, result):
    fn = subject.fn
    inputs = subject.fresh()
    outs = as_tuple(fn(*inputs))
    out_pos = subject.diff_out or [i for i, o in enumerate(outs) if is_tensor(o) and (o.is_floating_point() or o.is_complex())]
    spec = {
        "fn": fn, "fresh": subject.fresh, "in_positions": subject.grad_pos, "out_positions": out_pos,
        "in_names": subject.in_names, "out_names": subject.out_names, "order": "forward",
        "diff_out": subject.diff_out,
    }
    o = subject.opts
    kw = {"eps": float(o["eps"]), "atol": float(o["atol"]), "rtol": float(o["rtol"]),
          "check_undefined_grad": False}
    ins_real = sum(real_numel(inputs[j]) for j in subject.grad_pos)
    outs_real = sum(real_numel(outs[p]) for p in out_pos)

    def run(inp, fast):
        return REAL["gradcheck"](fn, inp, fast_mode=fast, raise_exception=True, check_forward_ad=True,
                                  check_backward_ad=False, **kw)

    return gradcheck_like(subject, spec, modes(subject.opts, outs_real, ins_real), "forward_ad", run)


def gradcheck_like(subject, spec, modes, label, run):
    GradcheckError = REAL["GradcheckError"]
    details = {"modes": [], "eps": subject.opts["eps"], "atol": subject.opts["atol"], "rtol": subject.opts["rtol"]}
    notes = []
    for mode in modes:
        torch.manual_seed(subject.opts["seed"])
        t = time.perf_counter()
        try:
            with slow_message_left_out():  # (fast mode's path only: slow mode never prints them)
                run(spec["fresh"](), mode == "fast")
        except GradcheckError as e:
            details["modes"].append({"mode": mode, "passed": False, "seconds": time.perf_counter() - t})
            if subject.on_failure is not None and spec["order"] != "second":
                # the verdict is known now; analysing it may take long (a slow forward, big inputs)
                subject.on_failure({"name": label, "status": "fail", "verdict": "gradcheck_failed",
                                    "message": "✗ %s fails: %s" % (label, first_line(str(e))),
                                    "details": {"torch_message": str(e)[:4000], "modes": list(details["modes"])}})
            rec = analyse_failure(subject, spec, str(e), mode, label, details)
            if rec is not None:
                return rec
            notes.append("fast mode failed but the slow-mode recomputation found no mismatch; "
                         "checked again in slow mode")
            if "slow" not in modes:
                modes.append("slow")
            continue
        details["modes"].append({"mode": mode, "passed": True, "seconds": time.perf_counter() - t})
    if notes:
        details["notes"] = notes
    return {"status": "pass", "details": details}


def analyse_failure(subject, spec, msg, mode, label, details):
    """A record for a GradcheckError, or None when a fast-mode failure does not reproduce."""
    order = spec["order"]
    details["torch_message"] = msg if len(msg) < 4000 else msg[:4000] + "…"
    ctx_loc = {"first": "backward", "second": "backward", "forward": "jvp"}[order]
    what = {"first": "Jacobian mismatch", "second": "second-order Jacobian mismatch (gradgradcheck)",
            "forward": "forward-mode Jacobian mismatch (jvp)"}[order]

    def finish(verdict, summary, message, status="fail"):
        details["verdict_reason"] = message
        why = "inputs" if verdict == "non_differentiable_point" else ctx_loc
        return {"status": status, "verdict": verdict, "message": summary, "details": details,
                "_outcome": Outcome(status, verdict, summary, message, location=subject.reporter.location_for(why))}

    if "Backward is not reentrant" in msg:
        return finish("nondeterministic_backward",
                      "✗ backward is nondeterministic (gradcheck: backward is not reentrant)", msg)
    if "backward not multiplied by grad_output" in msg:
        return finish("wrong_gradient",
                      "✗ backward ignores grad_output: its result does not scale with the incoming gradient",
                      msg)
    if "handle undefined output grads" in msg:
        return finish("undefined_grad",
                      "✗ backward fails when an output's gradient is undefined (None); handle None grads or "
                      "pass check_undefined_grad=False", msg)
    if "While computing batched gradients" in msg:
        return finish("batched_grad",
                      "✗ batched gradients fail: " + first_line(msg.split("got:", 1)[-1]), msg)

    parsed = parse_gradcheck_message(msg)
    hint = None
    diff_out = spec.get("diff_out") or []
    if parsed is not None:
        oi, ii, part, fwd = parsed
        in_pos = spec["in_positions"]
        if ii < len(in_pos):
            outs = diff_out if diff_out else spec["out_positions"]
            if oi < len(outs):
                hint = (outs[oi], in_pos[ii])
    inputs = spec["fresh"]()
    ana = JacobianAnalysis(spec["fn"], inputs, spec["in_positions"], spec["out_positions"],
                           spec["in_names"], spec["out_names"], subject.opts,
                           mode="forward" if order == "forward" else "reverse")
    primary, failing = ana.analyse(hint)
    if primary is None and ana.too_large:  # never the whole Jacobian in slow mode: out of memory
        return _too_large(subject, spec, msg, label, details, finish, what)
    if primary is None:
        if mode == "fast":
            return None
        if "Numerical gradient for function expected to be zero" in msg and order == "second":
            return finish("not_twice_differentiable",
                          "✗ backward is not differentiable: second-order gradients are missing "
                          "(backward detaches or runs under no_grad)", msg)
        details["worst"] = []
        return finish("wrong_gradient" if "Jacobian" in msg else "gradcheck_failed",
                      "✗ %s: %s" % (label, first_line(msg)), msg)
    worst = ana.describe(primary, kink_check=True)
    details.update({
        "output": primary["o"], "output_name": spec["out_names"][primary["o"]],
        "input": spec["in_names"][primary["j"]], "input_position": primary["j"],
        "failing_elements": primary["failing_elements"], "total_elements": primary["total_elements"],
        "analytical_all_zero": primary["analytical_all_zero"],
        "worst": worst,
        "failing_pairs": [
            {"output": f["o"], "output_name": spec["out_names"][f["o"]],
             "input": spec["in_names"][f["j"]], "input_position": f["j"],
             "failing_elements": f["failing_elements"], "total_elements": f["total_elements"],
             "max_abs_error": nan_max(f["err"]), "analytical_all_zero": f["analytical_all_zero"]}
            for f in failing
        ],
        "recompute_notes": sorted(ana.notes),
    })
    if parsed is not None and parsed[2]:
        details["torch_part"] = parsed[2]
    w = worst[0]
    where = "%s%s" % (w["input"], idx(w["input_index"]))
    out_where = "%s%s" % (w["output_name"], idx(w["output_index"]))
    if order == "second" and (primary["analytical_all_zero"] or "once_differentiable" in ana.notes):
        once = "once_differentiable" in ana.notes or (subject.fclass is not None and is_once_differentiable(subject.fclass))
        if once:
            summary = "✗ not twice differentiable: backward is @once_differentiable, so gradgradcheck fails"
            message = ("The backward is marked @once_differentiable, so second-order gradients are not "
                       "available. Remove gradgradcheck for this Function, or write a differentiable backward.")
        else:
            summary = ("✗ not twice differentiable: second-order gradients w.r.t. %s are all zero "
                       "(backward detaches or runs under no_grad)" % details["input"])
            message = ("The gradient computed by backward does not depend differentiably on %s: backward "
                       "probably uses .detach(), .data, torch.no_grad() or .item()/.tolist(). If double "
                       "backward is not needed, mark backward with @once_differentiable."
                       % details["input"])
        return finish("not_twice_differentiable", summary, message)
    kinks = [e for e in worst if e.get("kink")]
    if kinks and len(kinks) == len(worst):
        k = kinks[0]
        summary = ("✗ not differentiable at the test point: %s = %s is at a kink (one-sided slopes %s and %s); "
                   "use inputs away from it" % (where, fmt(scalar_fmt(k["input_value"])),
                                                 fmt(k["left_slope"]), fmt(k["right_slope"])))
        message = ("The %s differs from the numerical one only where the function has a kink: the left and "
                   "right finite differences disagree, so the central difference (%s) is meaningless there. "
                   "Choose inputs away from the kink; the gradient itself may be right."
                   % ({"first": "analytical gradient", "second": "second derivative",
                       "forward": "jvp"}[order], fmt(k["numerical"])))
        return finish("non_differentiable_point", summary, message)
    hook = surrogate(primary, ana.blocks, spec, inputs, subject.opts["atol"], subject.opts["rtol"],
                     subject.fclass) if order == "first" else None
    if hook is not None:
        details["surrogate"] = hook[0]
        details["surrogate_input"] = spec["in_names"][primary["j"]]
        return finish("surrogate_gradient", hook[1], hook[2])
    none_inputs = set(int(note.split(":")[1]) for note in ana.notes if note.startswith("none:"))
    pattern = classify(primary, ana.blocks, spec["in_names"], inputs, subject.opts["atol"], subject.opts["rtol"],
                       none_inputs)
    worst_rel = _worst_relative_error(failing, subject.opts["atol"])
    details["worst_relative_error"] = worst_rel
    to_scale = details["error_to_scale"] = error_to_scale(failing)
    details["ignored_entries_only"] = ignored_entries_only(failing, ana.blocks)
    details["close_to_scale"] = pattern is None and order == "first" and to_scale <= APPROXIMATE_SCALE
    if pattern is None and order == "first" and worst_rel <= APPROXIMATE:
        summary = ("⚠ gradients agree to %s%% but not within rtol=%s: an approximation in forward or backward? "
                   "(input %s, %s; %s)" % (fmt(100 * worst_rel), fmt(subject.opts["rtol"]), details["input"],
                                           details["output_name"], "worst |Δ| %s at %s" % (fmt(w["abs_error"]), where)))
        message = ("Every differing entry is within %s%% of the numerical derivative: a wrong formula is rarely "
                   "this close. If forward or backward is an approximation, check with a looser rtol "
                   "(-o rtol=...); with --strict this fails the run." % fmt(100 * APPROXIMATE))
        return finish("approximate_gradient", summary, message)
    worst_text = "worst |Δ| %s at %s, %s; numerical %s, analytical %s" % (
        fmt(w["abs_error"]), where, out_where, fmt(w["numerical"]), fmt(w["analytical"]))
    message = ("%d of %d entries of d(%s)/d(%s) differ beyond atol=%s + rtol=%s·|numerical|."
               % (primary["failing_elements"], primary["total_elements"], details["output_name"],
                  details["input"], fmt(subject.opts["atol"]), fmt(subject.opts["rtol"])))
    if pattern is not None and pattern["kind"] == "dropped":
        details["pattern"] = pattern
        summary = "✗ %s (%s; %s)" % (pattern["short"], details["output_name"], worst_text)
        message = pattern["text"][0].upper() + pattern["text"][1:] + ". " + message
    elif pattern is not None:
        details["pattern"] = pattern
        summary = "✗ %s for %s, %s: %s (%s)" % (what, details["input"], details["output_name"],
                                                pattern["short"], worst_text)
        message = pattern["text"][0].upper() + pattern["text"][1:] + ". " + message
    else:
        summary = "✗ %s: input %s, %s (%s)" % (what, details["input"], details["output_name"], worst_text)
    also = _other_inputs(primary, failing, ana.blocks, spec, inputs, subject.opts, none_inputs)
    if also:
        details["also"] = also
        summary += "; also " + "; ".join("%s: %s" % (a["input"], a["short"]) for a in also)
    documented = documented_mismatch(subject.fclass) if order == "first" else None
    if documented is not None:  # its authors wrote that gradcheck fails: their words, no ✗
        details["surrogate"] = "documented"
        details["documented"] = documented
        return finish("surrogate_gradient",
                      "⚠ inconclusive: the Function's own docs say its backward is not forward's exact derivative "
                      "(\"%s\"); gradcheck fails: %s" % (documented, summary.lstrip("✗ ")),
                      "gradcheck cannot prove a backward its authors wrote to differ from the derivative; if the "
                      "sentence quoted does not describe these inputs, declare inputs where it does not apply. "
                      + message)
    return finish("wrong_gradient", summary, message)


def _too_large(subject, spec, msg, label, details, finish, what):
    """A fast-mode failure too large to recompute element by element (``narrowing``): the inputs
    that fail alone, and whether backward drops their gradient; torch's sentence when none does."""
    try:
        found = narrowing.localise(subject, spec, torch_kwargs(subject.opts)) if spec["order"] == "first" else None
    except Exception:  # noqa: BLE001 - the failure stands; only its narrowing did not run
        found = None
    why = "fast-mode gradcheck; too large to recompute the Jacobian entry by entry"
    details["worst"] = []
    if found is None:
        return finish("wrong_gradient" if "Jacobian" in msg else "gradcheck_failed",
                      "✗ %s fails (%s): %s" % (label, why, first_line(msg)), msg)
    pattern, also = found
    details.update({"input": pattern["input"], "input_position": pattern["input_position"], "pattern": pattern})
    summary = "✗ %s (%s)" % (pattern["short"], why) if pattern["kind"] == "dropped" else \
        "✗ %s: input %s (%s)" % (what, pattern["input"], why)
    if also:
        details["also"] = also
        summary += "; also " + "; ".join("%s: %s" % (a["input"], a["short"]) for a in also)
    return finish("wrong_gradient", summary, pattern["text"][0].upper() + pattern["text"][1:] + ".")


def _other_inputs(primary, failing, blocks, spec, inputs, opts, none_inputs):
    """Patterns of the failing pairs of *other* inputs than the reported one (each input once)."""
    out, seen = [], {primary["j"]}
    for f in failing:
        if f["j"] in seen or len(out) >= 2:
            continue
        seen.add(f["j"])
        pattern = classify(f, blocks, spec["in_names"], inputs, opts["atol"], opts["rtol"], none_inputs)
        out.append({"input": spec["in_names"][f["j"]], "kind": pattern["kind"] if pattern else None,
                    "short": pattern["short"] if pattern else "gradients differ (%d of %d entries)"
                    % (f["failing_elements"], f["total_elements"])})
    return out


APPROXIMATE = 1e-2  # at most 1% off everywhere: an approximation, not a wrong formula
# every error within 10% of its Jacobian block's largest entry, with no pattern: what an iterative
# solver's tolerance leaves. Not enough to call a failing first draw approximate (a wrong formula
# touching small entries looks the same); on extra inputs after a strict pass it is no proof of a bug.
APPROXIMATE_SCALE = 0.1


def ignored_entries_only(failing, blocks):
    """Do the entries that differ all belong to input elements no output moves with (their
    numerical derivative is zero for every output: forward ignores them here, as a triangular
    solve ignores the other triangle)? Then backward gives a gradient to entries the Function
    does not read at these inputs: a sign the inputs do not fit the Function (its mode), not a
    proof of a wrong formula where it reads them."""
    for f in failing:
        ignored = None
        for (o, j), (a, n) in blocks.items():
            if j != f["j"] or n is None or n.numel() == 0:
                continue
            zero = (n == 0).all(dim=0)
            ignored = zero if ignored is None else ignored & zero
        if ignored is None:
            return False
        bad_cols = f["bad"].any(dim=0)
        if not bool(bad_cols.any()) or bool((bad_cols & ~ignored).any()):
            return False
    return True


def error_to_scale(failing):
    """The largest error of each failing pair of d(output)/d(input) relative to the largest entry of
    that Jacobian block (numerical or analytical), the worst over the pairs: a solver's tolerance or a
    truncated series leaves it small where one entry's own relative error is large (a tiny entry)."""
    worst = 0.0
    for f in failing:
        scale = max(nan_max(f["n"].abs()), nan_max(f["a"].abs()))
        err = nan_max(f["err"])
        if err != err or scale != scale or scale == 0:
            return float("inf")
        worst = max(worst, err / scale)
    return worst


def _worst_relative_error(failing, atol):
    worst = 0.0
    for f in failing:
        rel = f["err"] / (f["n"].abs() + atol)
        rel = torch.where(f["bad"], rel, torch.zeros_like(rel))
        value = nan_max(rel)
        if value != value:
            return float("inf")
        worst = max(worst, value)
    return worst


def check_as_written(subject, result):
    """Re-run the call exactly as written (original dtypes) after the float64 copy passed."""
    cap = subject.captured
    real = REAL[cap["variant"]]
    a = dict(inspect.signature(real).bind(*cap["args"], **cap["kwargs"]).arguments)
    a["raise_exception"] = True
    promoted = [{"name": i["name"], "from": i["promoted_from"]} for i in result["inputs"]
                if i.get("promoted_from")]
    torch.manual_seed(subject.opts["seed"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            real(**a)
        except REAL["GradcheckError"] as e:
            torch_message = str(e)
        else:
            return {"status": "pass", "message": "the call as written passes too",
                    "details": {"promoted": promoted}}
    names = ", ".join("%s (%s)" % (p["name"], p["from"]) for p in promoted)
    dts = sorted(set(p["from"] for p in promoted))
    summary = "✗ gradients are right in float64; your %s inputs make gradcheck fail" % "/".join(dts)
    message = ("The same check passes on float64 copies of the inputs (%s) but fails as written. gradcheck's "
               "finite differences need double precision: create the inputs with dtype=torch.float64 "
               "(or call .double()), or loosen eps/atol/rtol." % names)
    details = {"promoted": promoted, "torch_message": torch_message[:4000]}
    return {"status": "fail", "verdict": "low_precision_input", "message": summary, "details": details,
            "_outcome": Outcome("fail", "low_precision_input", summary, message, location=subject.reporter.location_for("call"))}
