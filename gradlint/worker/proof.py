"""What a passing run proved: which inputs and outputs gradcheck compared a non-zero Jacobian for.

gradcheck compares the analytical and numerical Jacobians entry by entry; where the numerical
Jacobian is zero (an output that does not move with an input at the checked point: inputs outside
an interpolation grid, a mode where the Function is the identity or constant, a saturated region),
the comparison proves only that backward returns zero there. So a ✓ needs evidence:

- ``responses(subject)`` measures, with central differences at gradcheck's own step along random
  directions, which outputs move with each checked input at the subject's inputs (no backward);
- the run gathers it over every draw whose gradcheck passed: an input proved on some draw is
  proved; an input no output moved with on any draw (after the run tried other inputs) has a zero
  Jacobian wherever it was checked;
- ``summary`` and ``conclude`` in ``verdict`` turn that into the ✓ line (or into "vacuous").
"""

import torch

from .tensors import as_tuple, away_from_zero, is_tensor


def _moved(before, after, scale):
    for x, y in zip(before, after):
        if not (is_tensor(x) and is_tensor(y)) or x.shape != y.shape:
            continue
        if not (x.is_floating_point() or x.is_complex()):
            continue
        xd = x.detach() if x.layout == torch.strided else x.detach().to_dense()
        yd = y.detach() if y.layout == torch.strided else y.detach().to_dense()
        d = (xd - yd).abs()
        d = torch.where(d.isnan(), torch.zeros_like(d), d)
        if d.numel() and float(d.max()) > scale:
            return True
    return False


def responses(subject, directions=2):
    """{input name: [output names that move with it]} at the subject's inputs, measured with
    central differences at gradcheck's step ``eps`` along random directions."""
    eps = float(subject.opts["eps"])
    gen = torch.Generator().manual_seed(int(subject.opts["seed"]) + 17)
    out = {}
    for j in subject.grad_pos:
        name = subject.in_names[j]
        moved = set()
        for _ in range(directions):
            plus, minus = subject.fresh(), subject.fresh()
            x = plus[j]
            if x.layout != torch.strided:
                moved.update(subject.out_names or [])  # not measured here: taken as moving
                break
            with torch.no_grad():
                v = away_from_zero(tuple(x.shape), gen, x.dtype).to(x.device)
                plus[j].add_(eps * v)
                minus[j].sub_(eps * v)
            a = as_tuple(subject.call(plus))
            b = as_tuple(subject.call(minus))
            for o, (ya, yb) in enumerate(zip(a, b)):
                if _moved([ya], [yb], 1e-12 + 1e-9 * _magnitude(ya)):
                    moved.add(subject.out_names[o] if o < len(subject.out_names) else "output %d" % o)
        out[name] = sorted(moved)
    return out


def _magnitude(t):
    if not is_tensor(t) or not t.numel() or not (t.is_floating_point() or t.is_complex()):
        return 0.0
    d = t.detach() if t.layout == torch.strided else t.detach().to_dense()
    d = d.abs()
    d = torch.where(torch.isfinite(d), d, torch.zeros_like(d))
    return float(d.max())


def gather(records, grad_names, unchecked):
    """The run's proof from its check records: ``{inputs, zero, outputs, unchecked, draws}``.

    ``inputs``: the checked inputs some output moved with on a draw whose gradcheck passed;
    ``zero``: checked inputs no output moved with on any passing draw (their Jacobian was zero
    wherever gradcheck compared it); ``outputs``: the outputs that moved; ``unchecked``: floating
    tensor inputs gradcheck did not differentiate, each ``{input, why}`` (a call's own choice, a
    constant the project's code passes, an input forward refuses with requires_grad)."""
    proved, outputs, draws = [], [], 0
    for rec in records:
        if rec["status"] != "pass" or not is_first_order(rec["name"]):
            continue
        found = rec["details"].get("responses")
        if found is None:
            continue
        draws += 1
        for name, outs in found.items():
            if outs and name not in proved:
                proved.append(name)
            for o in outs:
                if o not in outputs:
                    outputs.append(o)
    return {
        "inputs": [n for n in grad_names if n in proved],
        "zero": [n for n in grad_names if n not in proved],
        "outputs": outputs,
        "unchecked": list(unchecked),
        "draws": draws,
    }


def is_first_order(name):
    return name == "gradcheck" or name.startswith("gradcheck (")


def describe(proof):
    """", checked: x, w → output 0; y0: no output moves with it" for the ✓ line."""
    parts = []
    if proof["inputs"]:
        parts.append("%s → %s" % (", ".join(proof["inputs"]), ", ".join(proof["outputs"]) or "outputs"))
    if proof["zero"]:
        parts.append("%s: no output depends on %s (its zero gradient checked)"
                     % (", ".join(proof["zero"]), "it" if len(proof["zero"]) == 1 else "them"))
    if proof["unchecked"]:
        parts.append("not checked: " + ", ".join("%s (%s)" % (u["input"], u["why"]) for u in proof["unchecked"]))
    return "; ".join(parts)
