"""Backwards that are not meant to be derivatives: gradient hooks and surrogate gradients.

Two shapes of Function return, on purpose, a gradient that is not the derivative of forward:

- **a gradient hook**: forward returns an input unchanged (at the checked inputs and at a
  far-away draw, so a clamp or relu that happens to be the identity here does not count)
  and backward changes the gradient: gradient reversal, clipping, rerouting a gradient to
  another formula;
- **a surrogate gradient**: the output is piecewise constant here (its numerical derivative
  is zero for every checked input) and backward returns something else: a straight-through
  estimator (round, sign, argmax, sampling) or a score-function estimate; or no output
  depends on an input that backward returns a gradient for (a sparse-mixer estimator);
  or, read from the source, forward quantizes and backward passes the gradient through
  unchanged (a straight-through estimator whose output still moves through a scale).

gradcheck "fails" on both, and no backward could pass it. They are reported as
``inconclusive`` (``surrogate_gradient``), never as a wrong gradient; a missing relu mask
is not one of them, since its output moves with the positive inputs.
"""

import ast
import inspect
import re
import textwrap

import torch

from . import world
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


_QUANTIZING = ("round", "floor", "ceil", "trunc", "sign", "argmax", "argmin", "bernoulli", "multinomial",
               "heaviside", "fake_quantize_per_tensor_affine", "fake_quantize_per_channel_affine")
_CLAMPING = ("clamp", "clip", "clamp_min", "clamp_max", "hardtanh")
_ESTIMATOR_NAME = re.compile(r"(^|[a-z_])(STE|Ste)([A-Z_]|Fn|$)|^ste_|_ste(_|$)|straight.?through|StraightThrough",
                             re.IGNORECASE)
_ESTIMATOR_WORDS = ("straight-through", "straight through", "straight_through", "surrogate gradient",
                    "gradient estimator", " ste ", "(ste)")


def declares_estimator(fclass):
    """The code says the backward is an estimator on purpose: the class's name (``RoundSteFn``,
    ``StraightThroughClamp``), its docstrings ("straight-through", "surrogate gradient"), or the
    docstrings around its callers in its own module (``class ProgressiveSign: "... with STE"``
    whose method calls ``ProgressiveSignFunction.apply``). A clamp whose backward passes the
    gradient through is an STE only then; otherwise it is a relu-like backward that forgot its mask."""
    if fclass is None:
        return False
    if _ESTIMATOR_NAME.search(fclass.__name__):
        return True
    docs = [inspect.getdoc(fclass) or ""]
    for name in ("forward", "backward"):
        docs.append(inspect.getdoc(getattr(fclass, name, None)) or "")
    return _says_estimator(docs) or _says_estimator(_caller_docstrings(fclass))


def _says_estimator(docs):
    text = " " + " ".join(docs).lower() + " "
    return any(word in text for word in _ESTIMATOR_WORDS)


def _caller_docstrings(fclass):
    """The docstrings of the functions and classes, in fclass's own module, whose code calls
    ``<fclass name>.apply``: what the code that uses the Function says it is."""
    try:
        tree = ast.parse(inspect.getsource(inspect.getmodule(fclass)))
    except Exception:
        return []
    name = fclass.__name__

    def calls_apply(node):
        return any(isinstance(n, ast.Attribute) and n.attr == "apply" and (
            (isinstance(n.value, ast.Name) and n.value.id == name) or
            (isinstance(n.value, ast.Attribute) and n.value.attr == name)) for n in ast.walk(node))

    docs = []

    def visit(node, enclosing):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef) and child.name == name:
                continue  # the Function itself: its own docstrings are read by the caller
            if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                scope = (*enclosing, child)
                if not isinstance(child, ast.ClassDef) and calls_apply(child):
                    docs.extend(ast.get_docstring(s) or "" for s in scope)
                visit(child, scope)

    visit(tree, ())
    return docs


_DOCUMENTED = (
    re.compile(r"\bgrad(?:grad)?check\b[^.;]{0,80}\b(?:will|would|may|can|does|do)\s*(?:n[o']t\s+pass|fail)", re.I),
    re.compile(r"\bnot\s+(?:the\s+|a\s+)?(?:exact|true|real|classical|analytic(?:al)?|mathematical)\s+"
               r"(?:gradient|derivative)", re.I),
    re.compile(r"\b(?:gradient|backward|derivative)s?\b[^.;]{0,80}\b(?:by design|on purpose|intentionally)\b", re.I),
    re.compile(r"\b(?:by design|on purpose|intentionally)\b[^.;]{0,80}\b(?:gradient|backward|derivative)s?\b", re.I),
)


def documented_mismatch(fclass):
    """The sentence of the Function's own docstrings (its class, forward, backward) that says its
    backward is not forward's exact derivative on purpose ("These are different implicit
    functions, so torch.autograd.gradcheck will fail for n <= direct_n_max", "not the exact
    gradient", "a gradient ... by design"), or None. A gradcheck failure of such a Function is what
    its authors wrote down, not a bug found: it is reported with their words, as inconclusive."""
    if fclass is None:
        return None
    docs = [inspect.getdoc(fclass) or ""] + [inspect.getdoc(getattr(fclass, name, None)) or ""
                                             for name in ("forward", "backward")]
    text = re.sub(r"\s+", " ", " ".join(docs).replace("``", ""))
    for pattern in _DOCUMENTED:
        m = pattern.search(text)
        if m:
            start = max(text.rfind(". ", 0, m.start()) + 2, 0)
            end = text.find(". ", m.end())
            sentence = text[start:end + 1 if end >= 0 else len(text)].strip()
            return sentence if len(sentence) <= 200 else sentence[:199] + "…"
    return None


def straight_through_inputs(fclass):
    """Positions of the inputs whose gradient backward passes through unchanged
    (``return grad_output``, ``grad_output.clone()``) while forward quantizes (round, sign,
    floor, argmax, sampling): a straight-through estimator, read from the source."""
    if fclass is None:
        return set()
    try:
        ftree = ast.parse(textwrap.dedent(inspect.getsource(_unwrapped(fclass.forward))))
        btree = ast.parse(textwrap.dedent(inspect.getsource(_unwrapped(fclass.backward))))
    except Exception:
        return set()
    words = _QUANTIZING + (_CLAMPING if declares_estimator(fclass) else ())
    quantizes = any(isinstance(n, ast.Call) and (
        (isinstance(n.func, ast.Attribute) and n.func.attr.rstrip("_") in words) or
        (isinstance(n.func, ast.Name) and n.func.id in words)) for n in ast.walk(ftree))
    function = next((n for n in btree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if not quantizes or function is None or len(function.args.args) < 2:
        return set()
    grads = {function.args.args[1].arg}
    for node in ast.walk(function):  # `g = grad_output.clone()`, `g = grad_output`
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and _passes(node.value, grads):
            grads.add(node.targets[0].id)
    out = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Return) and node.value is not None:
            items = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
            out.update(i for i, item in enumerate(items) if _passes(item, grads))
    return out


def _unwrapped(fn):
    fn = getattr(fn, "_torchdynamo_orig_callable", fn)  # @torch.compile
    return inspect.unwrap(getattr(fn, "__func__", fn))


def _passes(node, grads):
    """``g``, ``g.clone()``, ``g.contiguous()`` for a gradient name ``g``."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.args \
            and node.func.attr in ("clone", "contiguous", "detach"):
        node = node.func.value
    return isinstance(node, ast.Name) and node.id in grads


def _step_mask(block, atol):
    """A square block that is diagonal with entries 0 or 1 (and some 0): the Jacobian of a clamp,
    a ReLU-like mask or a quantizer at these inputs (1 where it passes x, 0 where it is flat)."""
    if block is None or block.dim() != 2 or block.shape[0] != block.shape[1] or not block.numel():
        return False
    eye = torch.eye(block.shape[0], dtype=torch.bool)
    if bool((block[~eye].abs() > 10 * atol).any()):
        return False
    d = block.diagonal()
    ones, zeros = (d - 1).abs() <= 10 * atol, d.abs() <= 10 * atol
    return bool((ones | zeros).all()) and bool(zeros.any())


def straight_through_blocks(blocks, atol, rtol):
    """Inputs whose gradient backward passes through unchanged (the analytical block is the
    identity) where forward is a clamp or a quantizer (its numerical block a 0/1 mask, or zero):
    a straight-through estimator, read from the Jacobians (taken as one only when the code
    declares an estimator)."""
    out = set()
    for (_o, j), (a, n) in blocks.items():
        if _identity(a, atol, rtol) and (_step_mask(n, atol) or _zero(n, atol)):
            out.add(j)
    return out


def surrogate(primary, blocks, spec, inputs, atol, rtol, fclass=None):
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
    through = straight_through_inputs(fclass)
    if declares_estimator(fclass):  # a clamp's STE looks like a relu that forgot its mask: the code says which
        through |= straight_through_blocks(blocks, atol, rtol)
    if through and any(_identity(blocks.get((o2, j2), (None, None))[0], atol, rtol)
                       for (o2, j2) in blocks if j2 in through):
        names = ", ".join(spec["in_names"][k] for k in sorted(through))
        return ("straight_through",
                "⚠ inconclusive: forward clamps or quantizes %s and backward passes its gradient through "
                "unchanged: a straight-through estimator (its other inputs' gradients belong to the estimator "
                "too), which gradcheck cannot prove" % names,
                "The true derivative of a clamp is 0 where it clamps, and of a quantizer 0 almost everywhere; a "
                "straight-through estimator replaces it by the identity on purpose.")
    if _identity(n, atol, rtol) and not _identity(a, atol, rtol) and not world.group_of_one() and \
            _returns_input_unchanged(spec["fn"], inputs, j, o):
        return ("hook",
                "⚠ inconclusive: forward returns %s unchanged and backward changes its gradient: a gradient "
                "hook (reversal, clipping, rerouting), which gradcheck cannot prove" % name,
                "Forward is the identity in %s (also far from the checked inputs), so its derivative is the "
                "identity; a backward that returns something else rewrites gradients on purpose." % name)
    same_input = [blk for (_o2, j2), (_a2, blk) in blocks.items() if j2 == j]
    if _zero(n, atol) and not _zero(a, atol) and same_input and all(_zero(blk, atol) for blk in same_input
                                                                    if blk is not None):
        return ("estimator",
                "⚠ inconclusive: no output depends on %s here (its numerical derivative is zero) but backward "
                "returns a gradient for it: a gradient estimator (a sparse mixer, a surrogate), which gradcheck "
                "cannot prove" % name,
                "Forward does not move when %s moves, so its true derivative is zero; a backward that returns "
                "something else is an estimator by design — or forward forgot to use %s." % (name, name))
    return None
