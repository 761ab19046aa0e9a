"""A fast-mode gradcheck failure on inputs too large to recompute element by element.

``jacobian.JacobianAnalysis`` recomputes the failing Jacobian block to find the worst entries,
at most ``max_recompute_evals`` function evaluations: an image's inverse wavelet transform
(3×5×64×64 in, as much out) would take one backward pass per output element. Checking such a
failure again in slow mode builds the whole Jacobian (245,760 × 430,080 entries: out of memory
after minutes). Instead, each differentiable input is checked alone in fast mode (the others held
constant), which names the inputs whose gradient is wrong, and one backward pass says whether
backward returns None for them (a dropped gradient: the output moves with that input, the failing
check says, and backward gives it nothing). That is what the report says, without worst entries.
"""

import torch

from .checks import grad_outputs_for
from .patterns import dropped
from .tensors import as_tuple, is_tensor
from .torch_setup import REAL, slow_message_left_out


def alone(spec, j, gradcheck_kwargs):
    """A fast-mode gradcheck of ``spec["fn"]`` in input ``j`` only, the other inputs constant:
    True when it passes."""
    inputs = spec["fresh"]()
    held = [x.detach() if is_tensor(x) else x for x in inputs]

    def only_j(x):
        args = list(held)
        args[j] = x
        return spec["fn"](*args)

    try:
        with slow_message_left_out():
            REAL["gradcheck"](only_j, (inputs[j],), fast_mode=True, raise_exception=True, **gradcheck_kwargs)
    except REAL["GradcheckError"]:
        return False
    return True


def none_from_backward(spec, positions, seed):
    """The positions among ``positions`` backward returns None for (one backward pass)."""
    inputs = spec["fresh"]()
    outs = [o for o in as_tuple(spec["fn"](*inputs)) if is_tensor(o) and o.requires_grad]
    if not outs:
        return set()
    grad_outputs = grad_outputs_for(outs, torch.Generator().manual_seed(seed))
    grads = torch.autograd.grad(outs, [inputs[j] for j in positions], grad_outputs, allow_unused=True)
    return set(j for j, g in zip(positions, grads) if g is None)


def localise(subject, spec, gradcheck_kwargs):
    """``(primary, also)`` for a first-order failure too large to recompute: the first failing
    input's pattern (a dropped gradient, or gradients that differ) and the other failing inputs',
    or None when no input fails alone (the failure needs inputs moving together)."""
    failing = [j for j in spec["in_positions"] if not alone(spec, j, gradcheck_kwargs)]
    if not failing:
        return None
    nones = none_from_backward(spec, failing, subject.opts["seed"])
    names = spec["in_names"]
    found = []
    for j in failing:
        if j in nones:
            found.append(dict(dropped(names[j]), input_position=j))
        else:
            found.append({"kind": None, "input": names[j], "input_position": j,
                          "short": "gradients differ (fast-mode gradcheck of `%s` alone)" % names[j],
                          "text": "the gradient of %s differs from the numerical one (a fast-mode gradcheck "
                                  "of %s alone, the other inputs held constant)" % (names[j], names[j])})
    return found[0], found[1:]
