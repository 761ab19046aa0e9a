from __future__ import annotations

from typing import Iterator

import libcst as cst

from ...analysis.block import BlockAnalysis
from ...analysis.facts import TensorFact
from ...analysis.gradcheck_calls import input_elements
from ...analysis.origins import ValueOrigin, value_origin
from ...analysis.test_context import expects_exception
from ...findings import Applicability, Severity
from .. import edits
from ..base import MENTIONS_GRADCHECK, FixProposal, Invalid, Replacement, Report, Rule, Valid
from .input_range import input_node

_EXPANDING_METHODS = frozenset({"expand", "expand_as", "broadcast_to"})
_EXPANDING_FUNCTIONS = frozenset({"torch.broadcast_to"})
# methods that keep the strides of the tensor they are called on
_STRIDE_KEEPING = frozenset({"requires_grad_", "retain_grad", "detach", "detach_"})


class ExpandedGradcheckInput(Rule):
    """## What it does
    Checks for `gradcheck`/`gradgradcheck` inputs that require grad and are made with
    `expand`, `expand_as` or `broadcast_to`, with no copy (`.contiguous()`, `.clone()`)
    after it.

    ## Why is this bad?
    An expanded tensor has stride 0 along the expanded dimensions: all its elements
    there share one memory location, so perturbing one element perturbs them all and the
    numerical Jacobian is meaningless. torch 2.13 refuses such inputs up front with a
    plain `RuntimeError: The 0th input has a dimension with stride 0. gradcheck only
    supports inputs that are non-overlapping to be able to compute the numerical
    gradients correctly. You should call .contiguous on the input before passing it to
    gradcheck.` (measured; `raise_exception=False` does not catch it, `fast_mode=True`
    and gradgradcheck raise it too). Expanded inputs that do not require grad are
    accepted.

    ## Example
    ```python
    bias = torch.randn(1, dtype=torch.float64, requires_grad=True).expand(8)
    gradcheck(my_op, (x, bias))
    ```

    Use instead:
    ```python
    bias = torch.randn(1, dtype=torch.float64, requires_grad=True).expand(8).contiguous()
    gradcheck(my_op, (x, bias))
    ```

    ## Fix safety
    The fix appends `.contiguous()` to the expansion: the values are the same, only the
    memory layout changes. It is safe when the expansion is written in the gradcheck
    call; when it is bound to a variable that other code also uses, it is unsafe.
    """

    code = "GL029"
    name = "expanded-gradcheck-input"
    severity = Severity.ERROR
    summary = "a gradcheck input that requires grad is an expanded (stride-0) tensor (RuntimeError)"
    requires = MENTIONS_GRADCHECK
    requires_gradcheck_aliases = True

    VALID = [
        Valid("""
            import torch
            x = torch.randn(1, dtype=torch.float64, requires_grad=True).expand(3).contiguous()
            torch.autograd.gradcheck(torch.sin, (x,))
            """),
        Valid("""
            import torch
            w = torch.randn(3, dtype=torch.float64, requires_grad=True)
            b = torch.randn(1, dtype=torch.float64).expand(3)
            torch.autograd.gradcheck(torch.mul, (w, b))
            """, why="an expanded input that does not require grad is accepted"),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            def test_sin():
                base = torch.randn(1, dtype=torch.float64, requires_grad=True)
                torch.autograd.gradcheck(torch.sin, (base.expand(3),))
            """,
            message="gradcheck input `base.expand(3)` requires grad and is expanded (stride 0): "
                    "torch raises RuntimeError; call .contiguous() on it",
            range=(4, 42, 4, 56),
            fixed="""
            import torch
            def test_sin():
                base = torch.randn(1, dtype=torch.float64, requires_grad=True)
                torch.autograd.gradcheck(torch.sin, (base.expand(3).contiguous(),))
            """,
            applicability="safe",
        ),
        Invalid(
            """
            import torch
            def test_mul(x):
                w = torch.randn(1, 4, dtype=torch.float64).expand(5, 4).requires_grad_()
                assert torch.autograd.gradcheck(torch.mul, (x, w))
            """,
            message="gradcheck input `w` requires grad and is expanded (stride 0): torch raises "
                    "RuntimeError; call .contiguous() on it",
            fixed="""
            import torch
            def test_mul(x):
                w = torch.randn(1, 4, dtype=torch.float64).expand(5, 4).contiguous().requires_grad_()
                assert torch.autograd.gradcheck(torch.mul, (x, w))
            """,
            applicability="safe",
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
                fact = block.evaluator.fact(element.expr, call.site) if element.inline else element.fact
                if not (isinstance(fact, TensorFact) and fact.requires_grad is True):
                    continue
                origin = value_origin(element.expr, call.site, block.context)
                expansion = _expansion(origin) if origin is not None else None
                if expansion is None:
                    continue
                shown = edits.label(element.expr, block.code(element.expr))
                message = (f"gradcheck input {shown} requires grad and is expanded (stride 0): "
                           f"torch raises RuntimeError; call .contiguous() on it")
                node, site = expansion
                fix = None
                if edits.contains(call.node, node) or not edits.used_elsewhere(
                        site, _bound_name(element.expr) or "", [call.node]):
                    fix = FixProposal("Append `.contiguous()` to the expansion", Applicability.SAFE,
                                      (Replacement(node, block.code(node) + ".contiguous()", site),))
                elif site.top_statement is call.site.top_statement:
                    fix = FixProposal("Append `.contiguous()` to the expansion", Applicability.UNSAFE,
                                      (Replacement(node, block.code(node) + ".contiguous()", site),))
                yield Report(input_node(call, element), message, call.site, fix)


def _expansion(origin: ValueOrigin):
    """(the expanding call, its site) when nothing after it copies the tensor."""
    calls = list(origin.calls)
    for position in range(len(calls) - 1, -1, -1):
        call = calls[position]
        if call.method in _EXPANDING_METHODS:
            base = _literal_sizes(origin.root) if position == 0 and origin.qualified else None
            if not _may_add_stride_zero(base, _sizes(call.node)):
                return None
            return call.node, call.site
        if call.method not in _STRIDE_KEEPING:
            return None
    if origin.qualified in _EXPANDING_FUNCTIONS:
        site = origin.expressions[0][1]
        return origin.root, site
    return None


def _sizes(call: cst.Call) -> list[cst.BaseExpression]:
    sizes = [arg.value for arg in call.args if arg.keyword is None and arg.star != "**"]
    if len(sizes) == 1 and isinstance(sizes[0], (cst.Tuple, cst.List)):
        sizes = [element.value for element in sizes[0].elements]
    return sizes


def _literal_sizes(factory: cst.Call) -> list[int] | None:
    """The shape a factory such as ``torch.randn(1, 4)`` is given, when literal."""
    sizes = [_literal_int(size) for size in _sizes(factory)]
    return None if not sizes or None in sizes else sizes  # type: ignore[return-value]


def _may_add_stride_zero(base: list[int] | None, target: list[cst.BaseExpression]) -> bool:
    """Could expanding ``base`` to ``target`` give a dimension of size > 1 and stride 0?
    (gradcheck ignores the stride of dimensions of size 1.)"""
    if not target:
        return True  # expand_as / broadcast_to(other): the sizes are not written out
    sizes = [_literal_int(size) for size in target]
    known = base is not None and None not in sizes
    if not known:
        return not all(size in (1, -1) for size in sizes)
    assert base is not None
    padded = [1] * (len(sizes) - len(base)) + base
    return any(new not in (-1, old) and new > 1 and old == 1
               for new, old in zip(sizes, padded))  # type: ignore[operator]


def _literal_int(node: cst.BaseExpression) -> int | None:
    if isinstance(node, cst.Integer):
        return int(node.value)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) and \
            isinstance(node.expression, cst.Integer):
        return -int(node.expression.value)
    return None


def _bound_name(expr: cst.BaseExpression) -> str | None:
    return expr.value if isinstance(expr, cst.Name) else None
