"""The checks that come before gradcheck: forward runs, leaves its inputs alone, is
deterministic, and its backward is deterministic.

Each check takes a Subject and returns a record ``{"status", "verdict", "message",
"details", "_outcome"}``; a failing record carries the Outcome the run ends with.
"""

import torch

from .outcome import Outcome
from .tensors import as_tuple, away_from_zero, is_tensor, max_abs_diff
from .text import fmt
from .writes import find_writes, write_location, writes_to_leaf


def check_forward(subject, result):
    out = subject.call(subject.fresh())
    outs = as_tuple(out)
    info = []
    for i, o in enumerate(outs):
        if is_tensor(o):
            info.append({"index": i, "kind": "tensor", "shape": list(o.shape),
                         "dtype": str(o.dtype).replace("torch.", ""), "requires_grad": bool(o.requires_grad)})
        else:
            info.append({"index": i, "kind": "value", "type": type(o).__name__})
    result["outputs"] = info
    subject.out_count = len(outs)
    subject.diff_out = [i for i, o in enumerate(outs) if is_tensor(o) and o.requires_grad]
    subject.out_names = ["output %d" % i for i in range(len(outs))]
    bad = [i for i, o in enumerate(outs) if not is_tensor(o)]
    if bad:
        summary = "✗ forward returned a %s at output %d; gradcheck needs tensors" % (
            type(outs[bad[0]]).__name__, bad[0])
        return {"status": "error", "verdict": "exception", "message": summary,
                "_outcome": Outcome("error", "exception", summary,
                                    location=subject.reporter.location_for("forward"))}
    return {"status": "pass", "details": {"outputs": len(outs), "differentiable_outputs": len(subject.diff_out)}}


def check_input_mutation(subject, result):
    inputs = subject.fresh()
    snap = [(i, t.detach().clone(), t._version) for i, t in enumerate(inputs) if is_tensor(t)]
    try:
        subject.call(inputs)
    except RuntimeError as e:
        if writes_to_leaf(e):
            return _mutated_record(subject, [], str(e), subject.reporter.user_frames(e)[-1:])
        raise
    changed = []
    for i, before, ver in snap:
        t = inputs[i]
        d = max_abs_diff(t, before)
        if d > 0 or t._version != ver:
            changed.append({"input": subject.in_names[i], "position": i, "max_change": d,
                            "version_bumped": t._version != ver})
    if changed:
        writes = find_writes(subject.call, subject.fresh(), subject.in_names, subject.reporter.roots)
        return _mutated_record(subject, changed, None, writes)
    return {"status": "pass"}


def _mutated_record(subject, changed, torch_message, writes):
    """``writes``: where the user's code wrote to the inputs (writes.find_writes), or the
    frame that raised torch's error about a leaf, when known."""
    if changed:
        names = ", ".join(c["input"] for c in changed)
        summary = "✗ forward modifies its input%s %s in place" % ("s" if len(changed) > 1 else "", names)
    else:
        summary = "✗ forward modifies a leaf input that requires grad in place"
    if writes and writes[0].get("code"):
        summary += ": `%s` (line %d)" % (writes[0]["code"], writes[0]["line"])
    msg = ("gradcheck perturbs inputs and re-runs forward; a forward that changes its inputs makes the "
           "numerical Jacobian meaningless. Work on a copy (x = x.clone()) or use ctx.mark_dirty and "
           "return the modified tensor.")
    if torch_message:
        msg = torch_message + "\n" + msg
    location = subject.reporter.location_for("forward")
    if writes:
        write = writes[0]
        location = write_location(write) if "position" in write else \
            {"file": write["file"], "line": write["line"], "function": write["function"], "reason": "raised here"}
    details = {"changed": changed}
    if writes and "position" in writes[0]:
        details["writes"] = writes
    return {"status": "fail", "verdict": "input_mutated", "message": summary, "details": details,
            "_outcome": Outcome("fail", "input_mutated", summary, msg, location=location)}


def check_random_op(subject, result):
    seed = subject.opts["seed"]
    torch.manual_seed(seed + 1)
    a = subject.fn(*subject.fresh())
    torch.manual_seed(seed + 2)
    b = subject.fn(*subject.fresh())
    diff = max_abs_diff(a, b)
    if diff == 0:
        return {"status": "pass"}
    torch.manual_seed(seed + 1)
    a2 = subject.fn(*subject.fresh())
    same_seed = max_abs_diff(a, a2)
    if same_seed == 0 and subject.may_reseed:
        subject.reseed()
        return {"status": "pass", "message": "forward is random (it samples): checked with the RNG reseeded "
                                             "before every call, so every evaluation sees the same random numbers",
                "details": {"max_difference": diff, "reseeded": True}}
    if same_seed == 0:
        summary = "✗ forward is random: its output changes with the RNG seed (e.g. dropout)"
        msg = ("gradcheck evaluates forward many times; random ops such as dropout give a different function "
               "each time, so numerical gradients are garbage. Check the function with the randomness "
               "disabled (eval mode / p=0) or with a fixed mask passed in as an input.")
    else:
        summary = "✗ forward is not deterministic: two calls with the same inputs differ by %s" % fmt(same_seed)
        msg = "forward returns different values for the same inputs and seed; gradcheck cannot check it."
    return {"status": "fail", "verdict": "random_op", "message": summary,
            "details": {"max_difference": diff, "same_seed_difference": same_seed},
            "_outcome": Outcome("fail", "random_op", summary, msg,
                                location=subject.reporter.location_for("forward"))}


def check_sensitivity(subject, result):
    """Which inputs move the outputs here (finite differences; backward is not involved)?

    A gradcheck where no output depends on any checked input passes vacuously (e.g. a
    projection whose output is one-hot at these inputs); the conclusion reports it as
    inconclusive, never as a pass.
    """
    base = as_tuple(subject.call(subject.fresh()))
    responds, insensitive = [], []
    gen = torch.Generator().manual_seed(subject.opts["seed"] + 5)
    for j in subject.grad_pos:
        inputs = subject.fresh()
        x = inputs[j]
        if x.layout != torch.strided:
            responds.append(subject.in_names[j])  # not measured: assume it matters
            continue
        with torch.no_grad():
            scale = float(x.detach().abs().max()) if x.numel() else 1.0
            delta = away_from_zero(tuple(x.shape), gen, x.dtype) * (1e-3 * max(scale, 1e-3))
            x.add_(delta.to(x.device))
        moved = max_abs_diff(as_tuple(subject.call(inputs)), base)
        (responds if moved > 1e-12 else insensitive).append(subject.in_names[j])
    subject.insensitive = insensitive
    details = {"responds_to": responds, "insensitive": insensitive}
    if not responds:
        return {"status": "pass", "message": "no output moves when the inputs move", "details": details}
    return {"status": "pass", "details": details}


def grad_outputs_for(outs, gen):
    gos = []
    for o in outs:
        dt = o.dtype if (o.is_floating_point() or o.is_complex()) else torch.float64
        gos.append(away_from_zero(tuple(o.shape), gen, dt).to(o.device))
    return gos


def check_nondeterminism(subject, result):
    inputs = subject.fresh()
    outs = as_tuple(subject.call(inputs))
    douts = [outs[i] for i in subject.diff_out]
    if not douts:
        return {"status": "skipped", "message": "no output requires grad"}
    gen = torch.Generator().manual_seed(subject.opts["seed"] + 7)
    gos = grad_outputs_for(douts, gen)
    before = [g.clone() for g in gos]
    targets = [inputs[j] for j in subject.grad_pos]
    g1 = torch.autograd.grad(douts, targets, gos, retain_graph=True, allow_unused=True)
    changed = [k for k, (g, b) in enumerate(zip(gos, before)) if g.shape != b.shape or not torch.equal(g, b)]
    if changed:
        summary = ("✗ backward modifies its incoming gradient (grad_output of output %d) in place" % changed[0])
        msg = ("backward wrote into the gradient it was given (resize_/copy_/mul_ on grad_output): autograd "
               "may pass the same tensor to other nodes, and gradcheck's own bookkeeping breaks. Compute the "
               "result in a new tensor (grad_output * ... instead of grad_output.mul_(...)).")
        return {"status": "fail", "verdict": "grad_output_mutated", "message": summary,
                "details": {"outputs": changed},
                "_outcome": Outcome("fail", "grad_output_mutated", summary, msg,
                                    location=subject.reporter.location_for("backward"))}
    g2 = torch.autograd.grad(douts, targets, gos, retain_graph=True, allow_unused=True)
    worst = 0.0
    where = None
    for j, a, b in zip(subject.grad_pos, g1, g2):
        if a is None and b is None:
            continue
        d = float("inf") if (a is None or b is None) else max_abs_diff(a, b)
        if d > worst:
            worst, where = d, j
    tol = float(subject.opts["nondet_tol"])
    if worst > tol:
        name = subject.in_names[where]
        summary = ("✗ backward is nondeterministic: two backward passes differ by up to %s (input %s)"
                   % (fmt(worst), name))
        msg = ("Running backward twice with the same grad_outputs gave different gradients. If this is "
               "expected (atomic adds, random ops in backward), pass nondet_tol=%s to gradcheck." % fmt(worst))
        return {"status": "fail", "verdict": "nondeterministic_backward", "message": summary,
                "details": {"max_difference": worst, "input": name, "nondet_tol": tol},
                "_outcome": Outcome("fail", "nondeterministic_backward", summary, msg,
                                    location=subject.reporter.location_for("backward"))}
    return {"status": "pass", "details": {"max_difference": worst}}
