"""Backwards that are not meant to be derivatives: gradient hooks and surrogate gradients.

Two shapes of Function return, on purpose, a gradient that is not the derivative of forward:

- **a gradient hook**: forward returns an input unchanged (at the checked inputs and at a
  far-away draw, so a clamp or relu that happens to be the identity here does not count)
  and backward changes the gradient: gradient reversal, clipping, rerouting a gradient to
  another formula;
- **a surrogate gradient**: the output is piecewise constant here (its numerical derivative
  is zero for every checked input) and backward returns something else: a straight-through
  estimator (round, sign, argmax, sampling) or a score-function estimate.

gradcheck "fails" on both, and no backward could pass it. They are reported as
``inconclusive`` (``surrogate_gradient``), never as a wrong gradient; a missing relu mask
is not one of them, since its output moves with the positive inputs.
"""

import torch

from .tensors import as_tuple, is_tensor


def _zero(block, atol):
    return block is not None and block.numel() > 0 and float(block.abs().max()) <= 10 * atol


def _identity(block, atol, rtol):
    if block is None or block.dim() != 2 or block.shape[0] != block.shape[1]:
        return False
    eye = torch.eye(block.shape[0], dtype=block.dtype)
    return bool(((block - eye).abs() <= 10 * atol + 10 * rtol).all())


def _returns_input_unchanged(fn, inputs, j, o):
    """forward(…, x', …)[o] is exactly x' for x' far from the checked x."""
    x = inputs[j]
    if not is_tensor(x) or not x.is_floating_point():
        return False
    far = [t.detach().clone() if is_tensor(t) else t for t in inputs]
    far[j] = x.detach() * -25.0 + 3.0
    try:
        with torch.no_grad():
            outs = as_tuple(fn(*far))
    except Exception:
        return False
    out = outs[o] if o < len(outs) else None
    return is_tensor(out) and out.shape == far[j].shape and bool(torch.equal(out, far[j]))


def surrogate(primary, blocks, spec, inputs, atol, rtol):
    """``(kind, summary, message)`` when the failing pair is a hook or a surrogate, else None."""
    o, j = primary["o"], primary["j"]
    a, n = primary["a"], primary["n"]
    name, out_name = spec["in_names"][j], spec["out_names"][o]
    if a is None or n is None or not a.numel():
        return None
    same_output = [blk for (o2, _j2), (_a2, blk) in blocks.items() if o2 == o]
    if _zero(n, atol) and not _zero(a, atol) and all(_zero(blk, atol) for blk in same_output if blk is not None):
        return ("surrogate",
                "⚠ inconclusive: %s is piecewise constant here (its numerical derivative is zero for every "
                "input) and backward returns a surrogate gradient for %s (a straight-through or "
                "score-function estimator): gradcheck cannot prove it" % (out_name, name),
                "Forward does not move when its inputs move a little, so its true derivative is zero and any "
                "other backward is a surrogate by design. If it is not meant to be one, forward is flat by "
                "mistake (rounding, a comparison, detached values).")
    if _identity(n, atol, rtol) and not _identity(a, atol, rtol) and _returns_input_unchanged(
            spec["fn"], inputs, j, o):
        return ("hook",
                "⚠ inconclusive: forward returns %s unchanged and backward changes its gradient: a gradient "
                "hook (reversal, clipping, rerouting), which gradcheck cannot prove" % name,
                "Forward is the identity in %s (also far from the checked inputs), so its derivative is the "
                "identity; a backward that returns something else rewrites gradients on purpose." % name)
    return None
