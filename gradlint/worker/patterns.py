"""What a Jacobian mismatch looks like, in one line: the pattern behind a wrong backward.

From the analytical (A) and numerical (N) Jacobian blocks already recomputed for the
report: A = c·N for one constant c (a missing factor; c = -1 is a sign flip), A = 0 (a
detached or missing term), two inputs' gradients swapped, a transposed gradient, or
errors only where an output element depends on *another* input element (a reduction over
the wrong dim). ``None`` when no simple pattern explains the mismatch.
"""

import torch

from .tensors import unravel


def _close(a, b, atol, rtol):
    if a is None or b is None or a.shape != b.shape:
        return False
    return bool(((a - b).abs() <= 10 * atol + 10 * rtol * b.abs()).all())


def _factor_text(c):
    for whole in (2, 3, 4, 0.5, 0.25, 1.5):
        if abs(c - whole) <= 1e-3 * abs(whole):
            return ("%g" % whole)
    if abs(c - round(c)) < 1e-3 and abs(c) < 1e6:
        return "%d" % round(c)
    return "%.3g" % c


def classify(primary, blocks, in_names, inputs, atol, rtol):
    """A dict ``{"kind", "text", ...}`` for the failing pair ``primary``, or None."""
    o, j = primary["o"], primary["j"]
    a, n = primary["a"], primary["n"]
    name = in_names[j]
    n_scale = float(n.abs().max()) if n.numel() else 0.0
    if n_scale <= 10 * atol:
        return None  # numerical is zero: the analytical side is simply wrong
    if float(a.abs().max()) <= atol:
        return {"kind": "zero", "short": "analytical gradient is zero (a detached or missing term)",
                "text": "the gradient of %s is zero: a detached or missing term in backward" % name}
    swapped = _swapped(o, j, blocks, in_names, atol, rtol)
    if swapped is not None:
        return swapped
    denom = float((n * n).sum())
    if denom > 0:
        c = float((a * n).sum()) / denom
        if _close(a, c * n, atol, rtol) and abs(c - 1.0) > 1e-3:
            if abs(c + 1.0) <= 1e-3:
                return {"kind": "sign", "factor": -1.0, "short": "wrong sign (analytical = -numerical)",
                        "text": "the gradient of %s has the wrong sign (analytical = -numerical)" % name}
            return {"kind": "scale", "factor": c,
                    "short": "analytical = %s × numerical (a constant factor)" % _factor_text(c),
                    "text": "analytical = %s × numerical for %s: a constant factor is missing or extra"
                            % (_factor_text(c), name)}
    transposed = _transposed(a, n, inputs[j], atol, rtol)
    if transposed:
        return {"kind": "transposed", "short": "the gradient is transposed",
                "text": "the gradient of %s is transposed" % name}
    if a.shape[0] == a.shape[1] and a.shape[0] > 1:
        eye = torch.eye(a.shape[0], dtype=torch.bool)
        bad = primary["bad"]
        if not bool((bad & eye).any()) and bool((bad & ~eye).any()):
            return {"kind": "offdiag", "short": "only cross-element entries are wrong (a reduction over the wrong dim?)",
                    "text": "only cross-element entries of d(out)/d(%s) are wrong, the elementwise ones match: "
                            "a reduction over the wrong dim?" % name}
    return None


def _swapped(o, j, blocks, in_names, atol, rtol):
    a_j, n_j = blocks.get((o, j), (None, None))
    for (o2, j2), (a_k, n_k) in blocks.items():
        if o2 != o or j2 == j or a_k is None or n_k is None or a_k.shape != n_j.shape:
            continue
        if _close(a_j, n_k, atol, rtol) and _close(a_k, n_j, atol, rtol) and not _close(n_j, n_k, atol, rtol):
            first, second = sorted((j, j2))
            return {"kind": "swap", "inputs": [in_names[first], in_names[second]],
                    "short": "the gradients of %s and %s are swapped" % (in_names[first], in_names[second]),
                    "text": "the gradients of %s and %s are swapped (each is returned in the other's slot)"
                            % (in_names[first], in_names[second])}
    return None


def _transposed(a, n, x, atol, rtol):
    if x.is_complex() or x.dim() < 2 or x.shape[-1] != x.shape[-2] or x.shape[-1] < 2:
        return False
    shape = tuple(x.shape)
    perm = []
    for k in range(x.numel()):
        idx = list(unravel(k, shape))
        idx[-1], idx[-2] = idx[-2], idx[-1]
        flat = 0
        for size, i in zip(shape, idx):
            flat = flat * size + i
        perm.append(flat)
    permuted = a[:, torch.tensor(perm)]
    return _close(permuted, n, atol, rtol) and not _close(a, n, atol, rtol)
