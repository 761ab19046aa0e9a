"""opcheck's fake tensor test on dense permuted (non-contiguous) copies of the inputs.

torch 2.13 compares the strides of a fake kernel's outputs with the real kernel's on every
device (pytorch#177115), but only at the inputs it is given: with contiguous inputs a fake
that copies its input's layout (``torch.empty_like(x)``) matches a kernel that returns
contiguous outputs, and so does a padded or sliced input, since ``empty_like`` of a
non-dense tensor is contiguous. A dense permuted input (same values, strides in another
order) makes ``empty_like`` permuted while the kernel's output stays contiguous: the wrong
fake shows. Measured on CPU: a stride-copying fake passes opcheck on contiguous and sliced
inputs and fails with "Stride mismatch! Strides are (4, 1) and (1, 3)" on ``x.t().contiguous().t()``.

A permuted input the real kernel itself rejects (a kernel that needs contiguous inputs) is
not a finding: it is noted, and the check passes.
"""

import torch

from .tensors import is_tensor
from .text import first_line

PERMUTED_TEST = "test_faketensor (permuted layout)"


def permuted(t):
    """A dense copy of t with its dims laid out in reverse order (column-major for a matrix)."""
    order = list(range(t.dim()))[::-1]
    inverse = [order.index(d) for d in range(t.dim())]
    copy = t.detach().permute(order).contiguous().permute(inverse)
    return copy.requires_grad_(t.requires_grad) if (t.is_floating_point() or t.is_complex()) else copy


def permuted_inputs(inputs):
    """(inputs with every tensor of 2+ dims and 2+ non-trivial sizes permuted, what changed)."""
    out, changed = [], []
    for i, v in enumerate(inputs):
        if is_tensor(v) and v.layout == torch.strided and sum(1 for s in v.shape if s > 1) >= 2:
            p = permuted(v)
            changed.append({"input": i, "shape": list(v.shape), "stride": list(p.stride())})
            v = p
        out.append(v)
    return tuple(out), changed


def check_permuted(op, subject, details, notes):
    """[(test, error)] of the fake tensor test on permuted inputs; fills details["layouts"]."""
    inputs, changed = permuted_inputs(subject.fresh())
    if not changed:
        details["layouts"] = {"permuted": None, "reason": "no input with two or more dims larger than 1"}
        return []
    for c in changed:
        c["input"] = subject.in_names[c["input"]]
    outcome = torch.library.opcheck(op, inputs, test_utils=("test_faketensor",), raise_exception=False)
    value = outcome.get("test_faketensor", "SUCCESS")
    details["layouts"] = {"permuted": changed}
    if value == "SUCCESS":
        details["tests"][PERMUTED_TEST] = "SUCCESS"
        return []
    text = first_line(str(value))
    details["tests"][PERMUTED_TEST] = "%s: %s" % (type(value).__name__, text[:400])
    if "mismatch" not in text.lower():
        notes.append("the op raises on dense permuted (non-contiguous) inputs (%s): its fake impl is checked on "
                     "contiguous inputs only" % text[:200])
        return []
    return [(PERMUTED_TEST, value)]


def what_failed(error, details):
    text = first_line(str(error))
    shown = ", ".join("%s %s with strides %s" % (c["input"], tuple(c["shape"]), tuple(c["stride"]))
                      for c in details["layouts"]["permuted"])
    if "Stride mismatch" in text:
        return ("the fake impl's output strides differ from the op's on a dense permuted input (%s): derive the "
                "output layout as the kernel does (torch.empty(shape) for contiguous outputs, not "
                "torch.empty_like(input))" % shown)
    return "the fake impl's output metadata differs from the op's on a dense permuted input (%s)" % shown
