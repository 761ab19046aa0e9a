from __future__ import annotations

from typing import Iterator

import libcst as cst

from ...analysis import torch_ops
from ...analysis.block import BlockAnalysis
from ...analysis.checked_code import CheckedCode, calls_in, input_targets
from ...analysis.facts import TensorFact
from ...analysis.gradcheck_calls import GradcheckCall, InputElement, input_elements
from ...analysis.origins import ValueOrigin, value_origin
from ...analysis.scopes import ModuleContext, Scope
from ...analysis.test_context import expects_exception
from ...findings import Applicability, Severity
from .. import edits
from ..base import MENTIONS_GRADCHECK, FixProposal, Invalid, Replacement, Report, Rule, Valid
from .input_range import input_node

_EMPTY = {"torch.empty": "torch.rand", "torch.empty_like": "torch.rand_like", "torch.empty_strided": None}
_ZEROS = frozenset({"torch.zeros", "torch.zeros_like"})
# methods after which an all-zero tensor is still all zeros
_ZERO_KEEPING = frozenset({
    "requires_grad_", "retain_grad", "detach", "clone", "contiguous", "double", "float", "half",
    "to", "cpu", "cuda", "view", "reshape", "t", "transpose", "permute", "unsqueeze", "squeeze",
    "expand", "flatten", "zero_", "cdouble", "cfloat",
})


class UninitializedOrKinkInput(Rule):
    """## What it does
    Checks the values given to `gradcheck`/`gradgradcheck`:

    - an input that requires grad made with `torch.empty`, `torch.empty_like`,
      `empty_strided` or `.new_empty(...)` and never filled;
    - an all-zero input (`torch.zeros`, `zeros_like`, `.new_zeros`) that the checked
      code passes straight to an op whose derivative jumps at 0: `relu`, `relu6`,
      `leaky_relu`, `threshold`, `sign`, `sqrt`, `clamp` with a bound of 0, or a
      `max`/`min`/`amax`/`amin` reduction.

    ## Why is this bad?
    `torch.empty` returns whatever the memory held. Measured on this machine with torch
    2.13: of 200 float64 allocations, 86 held zeros, 23 held NaN and 91 other values, and
    a NaN, huge or denormal input makes gradcheck fail (`GradcheckError: Jacobian
    mismatch`) for a correct function. The result depends on the allocator's history:
    a flaky test.

    At a kink, finite differences average the two one-sided slopes. Measured at an
    all-zero float64 input: `relu` gives a numerical 0.5 against an analytical 0, and
    gradcheck raises `GradcheckError: Jacobian mismatch for output 0 with respect to
    input 0` for a correct implementation; so do `relu6`, `leaky_relu`, `threshold`,
    `sign`, `sqrt`, `clamp(min=0)`, `clamp(max=0)` and the `max`/`min`/`amax`
    reductions (ties). `abs`, `torch.maximum(x, 0)`, `hardtanh`, `elu` and `norm` pass
    at 0 and are not reported.

    ## Example
    ```python
    x = torch.empty(3, dtype=torch.float64, requires_grad=True)
    gradcheck(my_op, (x,))
    z = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    gradcheck(torch.relu, (z,))
    ```

    Use instead:
    ```python
    x = torch.rand(3, dtype=torch.float64, requires_grad=True)
    gradcheck(my_op, (x,))
    z = (torch.rand(3, dtype=torch.float64) + 0.1).requires_grad_()
    gradcheck(torch.relu, (z,))
    ```

    ## Fix safety
    `torch.empty(...)` becomes `torch.rand(...)` (and `empty_like` `rand_like`), which
    takes the same size and keyword arguments: values in [0, 1). It is unsafe: the
    function may need other values (negative ones, or away from a kink). All-zero inputs
    have no fix: only the author knows which values avoid the kink.
    """

    code = "GL019"
    name = "uninitialized-or-kink-input"
    severity = Severity.WARNING
    summary = "a gradcheck input from torch.empty, or all zeros fed to relu/clamp/max (a kink)"
    requires = MENTIONS_GRADCHECK
    requires_gradcheck_aliases = True

    VALID = [
        Valid("""
            import torch
            x = torch.empty(3, dtype=torch.float64).uniform_(-1, 1).requires_grad_()
            torch.autograd.gradcheck(torch.sin, (x,))
            """, why="filled before the check"),
        Valid("""
            import torch
            x = torch.empty(3, dtype=torch.float64)
            x.normal_()
            x.requires_grad_()
            torch.autograd.gradcheck(torch.sin, (x,))
            """),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            def test_sin():
                x = torch.empty(3, 4, dtype=torch.float64, requires_grad=True)
                assert torch.autograd.gradcheck(torch.sin, (x,))
            """,
            message="gradcheck input `x` comes from torch.empty and is never filled: its values "
                    "are whatever memory held (zeros, NaN, garbage), so the check is not reproducible",
            range=(4, 48, 4, 52),
            fixed="""
            import torch
            def test_sin():
                x = torch.rand(3, 4, dtype=torch.float64, requires_grad=True)
                assert torch.autograd.gradcheck(torch.sin, (x,))
            """,
            applicability="unsafe",
        ),
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            from torch.autograd import gradcheck

            def test_relu():
                z = torch.zeros(2, 3, dtype=torch.float64, requires_grad=True)
                assert gradcheck(lambda t: F.relu(t) * 2, (z,))
            """,
            message="gradcheck input `z` is all zeros, where `F.relu(t)` has a kink: finite "
                    "differences average the two slopes there and gradcheck fails for a correct "
                    "gradient; use values away from 0",
            range=(7, 47, 7, 51),
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        for call in block.gradcheck_calls:
            if expects_exception(call.site):
                continue  # a test of torch's error: the mistake is on purpose
            elements = input_elements(call, block.evaluator)
            if elements is None:
                continue
            for element in elements:
                if not element.inline and not isinstance(element.expr, cst.Name):
                    continue
                fact = block.evaluator.fact(element.expr, call.site) if element.inline else element.fact
                if not (isinstance(fact, TensorFact) and fact.requires_grad is True):
                    continue
                origin = value_origin(element.expr, call.site, block.context)
                if origin is None:
                    continue
                report = _uninitialized(block, call, element, origin) or \
                    _kink(block, call, element, origin)
                if report is not None:
                    yield report


def _shown(block: BlockAnalysis, element: InputElement) -> str:
    return edits.label(element.expr, block.code(element.expr), element.index)


def _uninitialized(block: BlockAnalysis, call: GradcheckCall, element: InputElement,
                   origin: ValueOrigin) -> Report | None:
    empty = origin.qualified in _EMPTY or origin.root_method == "new_empty"
    if not empty or any(m in torch_ops.INITIALIZING_METHODS or m in torch_ops.INPLACE_METHODS
                        for m in origin.methods):
        return None
    factory = origin.qualified or "new_empty"
    message = (f"gradcheck input {_shown(block, element)} comes from {factory} and is never filled: "
               f"its values are whatever memory held (zeros, NaN, garbage), so the check is not "
               f"reproducible")
    fix = None
    replacement = _EMPTY.get(origin.qualified or "")
    func = origin.root.func
    if replacement is not None and isinstance(func, cst.Attribute) and \
            not any(a.keyword is not None and a.keyword.value == "memory_format" and
                    origin.qualified == "torch.empty" for a in origin.root.args):
        site = origin.expressions[0][1]
        fix = FixProposal(f"Fill it with `{replacement}`", Applicability.UNSAFE,
                          (Replacement(func.attr, replacement.split(".")[-1], site),))
    return Report(input_node(call, element), message, call.site, fix)


def _all_zeros(origin: ValueOrigin) -> bool:
    zeros = origin.qualified in _ZEROS or origin.root_method == "new_zeros"
    return zeros and all(m in _ZERO_KEEPING for m in origin.methods)


def _kink(block: BlockAnalysis, call: GradcheckCall, element: InputElement,
          origin: ValueOrigin) -> Report | None:
    if not _all_zeros(origin):
        return None
    code = block.checked_code(call)
    if code is None:
        return None
    found = _kink_use(block.context, code, element.index)
    if found is None:
        return None
    message = (f"gradcheck input {_shown(block, element)} is all zeros, where `{block.code(found)}` "
               f"has a kink: finite differences average the two slopes there and gradcheck fails "
               f"for a correct gradient; use values away from 0")
    return Report(input_node(call, element), message, call.site)


def _kink_use(context: ModuleContext, code: CheckedCode, index: int) -> cst.Call | None:
    """A kink op applied directly to the parameter that input ``index`` binds to."""
    for target in input_targets(code, index):
        for found in calls_in(target.region.body):
            if _is_kink(context, found, target.param, target.region.scope):
                return found
    return None


def _is_kink(context: ModuleContext, call: cst.Call, name: str, scope: Scope) -> bool:
    func = call.func
    positional = [a for a in call.args if a.keyword is None and not a.star]
    qualified = context.qualified(func, scope)
    if qualified is not None:
        if not positional or not _is_name(positional[0].value, name):
            return False
        short = qualified.rsplit(".", 1)[-1]
        if qualified in torch_ops.KINK_AT_ZERO_FUNCTIONS:
            return True
        if qualified == f"torch.{short}" and short in torch_ops.CLAMPS:
            return _zero_bound(call, positional[1:])
        if qualified == f"torch.{short}" and short in torch_ops.REDUCTIONS_WITH_TIES:
            return _reduction(call, positional[1:])
        return False
    if not (isinstance(func, cst.Attribute) and _is_name(func.value, name)):
        return False
    method = func.attr.value
    if method in torch_ops.KINK_AT_ZERO_METHODS:
        return True
    if method in torch_ops.CLAMPS:
        return _zero_bound(call, positional)
    if method in torch_ops.REDUCTIONS_WITH_TIES:
        return _reduction(call, positional)
    return False


def _zero_bound(call: cst.Call, bounds: list[cst.Arg]) -> bool:
    values = [a.value for a in bounds] + [a.value for a in call.args if a.keyword is not None and
                                          a.keyword.value in ("min", "max")]
    return any(_is_zero(value) for value in values)


def _reduction(call: cst.Call, rest: list[cst.Arg]) -> bool:
    """`x.max()`, `x.max(0)`, `x.max(dim=1)`: a reduction, not the two-tensor form."""
    return all(isinstance(a.value, (cst.Integer, cst.Tuple, cst.UnaryOperation)) for a in rest)


def _is_zero(node: cst.BaseExpression) -> bool:
    return isinstance(node, (cst.Integer, cst.Float)) and float(node.value) == 0.0


def _is_name(node: cst.BaseExpression, name: str) -> bool:
    return isinstance(node, cst.Name) and node.value == name
