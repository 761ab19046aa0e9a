from __future__ import annotations

import re
from typing import Iterator

import libcst as cst

from ...analysis.block import BlockAnalysis
from ...analysis.gradcheck_calls import StatementExpressions
from ...analysis.scopes import ModuleContext, Site, walk_statements
from ...findings import Severity
from ..base import Invalid, Report, Rule, Valid

# the same operand twice in a comparison, or a name bound to some `.grad` (a cheap textual
# pre-check: the rule itself decides)
_OPERAND = r"[\w.]+(?:\[[^\]\n]*\])?"
COMPARES = re.compile(
    rf"(?:allclose|assert_close|assertEqual|equal|isclose|assert_\w+|assertAllClose)\s*\(\s*"
    rf"({_OPERAND})\s*,\s*\1\s*[,)]"
    rf"|({_OPERAND})\.(?:allclose|equal|isclose)\(\s*\2\s*[,)]"
    rf"|^[ \t]*\w+\s*=\s*[\w.]+\.grad[ \t]*(?:#.*)?$",
    re.MULTILINE)
# what the name of every comparison below holds (aliases included: they are bound to one)
COMPARISON_NAMES = re.compile(r"[aA]ll[cC]lose|isclose|assert_close|[eE]qual")
_FUNCTIONS = frozenset({
    "torch.allclose", "torch.equal", "torch.isclose", "torch.testing.assert_close",
    "torch.testing.assert_allclose", "numpy.allclose", "numpy.array_equal", "numpy.isclose",
    "numpy.testing.assert_allclose", "numpy.testing.assert_array_equal",
    "numpy.testing.assert_almost_equal", "numpy.testing.assert_array_almost_equal",
})
# methods that compare their receiver, or their first two arguments (unittest, torch's TestCase)
_METHODS_OF_TWO = frozenset({"assertEqual", "assertAlmostEqual", "assertAllClose", "assert_close",
                             "assertTensorsSlowEqual", "assertNotEqual"})
_TENSOR_METHODS = frozenset({"allclose", "equal", "isclose"})


class SelfComparisonInReferenceTest(Rule):
    """## What it does
    Checks test assertions that compare a value with itself: `assert
    torch.allclose(x.grad, x.grad)`, `assert_close(a, a)`, `self.assertEqual(g, g)`,
    `self.assertTrue(x.grad.allclose(x.grad))`; and assertions comparing `ref = x.grad`
    (not a copy) with `x.grad` after a later `.backward()` into the same leaf. Only
    side-effect-free operands (names, attributes, constant subscripts) are compared:
    `allclose(f(x), f(x))` (a determinism check) is fine, and so is `torch.equal(x, x)`
    in a condition (the NaN check idiom: it is False only when `x` holds a NaN).

    ## Why is this bad?
    The comparison is true whatever the implementation does. The shared-leaf form is
    how reference tests go wrong in kernel libraries: measured with torch 2.13, after
    `(x * x).backward(g)` and `ref = x.grad`, a second `(x * 3).backward(g)`
    accumulates into the same tensor in place, so `ref is x.grad` and
    `torch.allclose(ref, x.grad)` is True although the two gradients (`2x` and `3`)
    differ; `torch.testing.assert_close` passes likewise. (With `ref = x.grad.clone()`
    the second gradient is `2x + 3`, and the comparison fails for a correct
    implementation: use separate leaves, or reset `x.grad = None` in between.)

    ## Example
    ```python
    out_ref = reference(x); out_ref.backward(g); ref_grad = x.grad
    out = fused(x); out.backward(g)
    torch.testing.assert_close(ref_grad, x.grad)
    ```

    Use instead:
    ```python
    x_ref = x.detach().clone().requires_grad_()
    reference(x_ref).backward(g)
    fused(x).backward(g)
    torch.testing.assert_close(x_ref.grad, x.grad)
    ```

    ## Fix safety
    No fix: which tensor was meant on one side is the author's knowledge.
    """

    code = "GL026"
    name = "self-comparison-in-reference-test"
    severity = Severity.ERROR
    summary = "a comparison of a gradient with itself (or with an alias of the same .grad)"
    requires = COMPARES
    requires_in_code = True  # (what it needs is code: a docstring or comment naming it is not)
    # every finding is on a comparison (`_FUNCTIONS`, `_METHODS_OF_TWO`, `_TENSOR_METHODS`),
    # reached through names that say so: a `ref = x.grad` alone is no finding
    requires_in_file = COMPARISON_NAMES

    VALID = [
        Valid("""
            import torch
            def test(x, x_ref):
                torch.testing.assert_close(x.grad, x_ref.grad)
            """),
        Valid("""
            import torch
            def test_deterministic(f, x):
                assert torch.allclose(f(x), f(x))
            """, why="calls may differ: a determinism check"),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            def test_grad(x, x_ref):
                assert torch.allclose(x.grad, x.grad)
            """,
            message="this comparison compares `x.grad` with itself: it is true whatever the "
                    "implementation does",
            range=(3, 12, 3, 42),
        ),
        Invalid(
            """
            import torch
            def test_fused(x, g):
                out_ref = torch.nn.functional.gelu(x)
                out_ref.backward(g)
                ref_grad = x.grad
                out = fused_gelu(x)
                out.backward(g)
                torch.testing.assert_close(ref_grad, x.grad)
            """,
            message="`ref_grad` is `x.grad` itself, not a copy, and the backward since then "
                    "accumulated into the same tensor: this comparison is true whatever the "
                    "implementation does (use a separate leaf, or reset `x.grad = None`)",
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        context = block.context
        for stmt, site in walk_statements(context.statements, context.scope, indexes=block.indexes):
            for call in StatementExpressions.of(stmt, cst.Call):
                assert isinstance(call, cst.Call)
                operands = _operands(context, call, site)
                if operands is None or not _asserted(stmt, call):
                    continue
                left, right = operands
                if _pure(left) and _same(block, left, right):
                    shown = " ".join(block.code(left).split())
                    message = (f"this comparison compares `{shown}` with itself: it is true "
                               f"whatever the implementation does")
                    yield Report(call, message, site)
                    continue
                alias = _stale_alias(block, left, right, site) or _stale_alias(block, right, left, site)
                if alias is not None:
                    name, grad = alias
                    message = (f"`{name}` is `{grad}` itself, not a copy, and the backward since "
                               f"then accumulated into the same tensor: this comparison is true "
                               f"whatever the implementation does (use a separate leaf, or reset "
                               f"`{grad} = None`)")
                    yield Report(call, message, site)


def _asserted(stmt: cst.BaseStatement, call: cst.Call) -> bool:
    """Is the comparison a test assertion (a statement of its own, `assert call`, or
    `self.assertTrue(call)`)? In a condition, `torch.equal(x, x)` is the NaN check idiom."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    for small in stmt.body:
        if isinstance(small, cst.Assert) and small.test is call:
            return True
        if isinstance(small, cst.Expr):
            value = small.value
            if value is call:
                return True
            if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and \
                    value.func.attr.value in ("assertTrue", "assert_") and value.args and \
                    value.args[0].value is call:
                return True
    return False


def _operands(context: ModuleContext, call: cst.Call, site: Site
              ) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    func = call.func
    qualified = context.qualified(func, site.scope)
    if qualified in _FUNCTIONS or (isinstance(func, cst.Attribute) and qualified is None and
                                   func.attr.value in _METHODS_OF_TWO):
        return (positional[0], positional[1]) if len(positional) >= 2 else None
    if qualified is None and isinstance(func, cst.Attribute) and func.attr.value in _TENSOR_METHODS \
            and len(positional) >= 1:
        return func.value, positional[0]
    return None


def _pure(node: cst.BaseExpression) -> bool:
    """A name, an attribute chain, or a constant subscript of one."""
    if isinstance(node, cst.Name):
        return True
    if isinstance(node, cst.Attribute):
        return _pure(node.value)
    if isinstance(node, cst.Subscript):
        return _pure(node.value) and all(
            isinstance(s.slice, cst.Index) and isinstance(s.slice.value, (cst.Integer, cst.SimpleString))
            for s in node.slice)
    return False


def _same(block: BlockAnalysis, left: cst.BaseExpression, right: cst.BaseExpression) -> bool:
    return "".join(block.code(left).split()) == "".join(block.code(right).split())


def _accumulates_into_grads(block: BlockAnalysis, call: cst.Call, site: Site) -> bool:
    """``loss.backward(...)`` or ``torch.autograd.backward(...)`` (not, for instance,
    ``torch.distributed.autograd.backward``, which leaves ``.grad`` alone)."""
    func = call.func
    qualified = block.context.qualified(func, site.scope)
    if qualified is not None:
        return qualified == "torch.autograd.backward"
    return isinstance(func, cst.Attribute) and func.attr.value == "backward"


def _stale_alias(block: BlockAnalysis, alias: cst.BaseExpression, grad: cst.BaseExpression,
                 site: Site) -> tuple[str, str] | None:
    """``alias`` was bound to ``grad`` (an ``x.grad`` attribute) earlier in straight-line
    code, and a ``.backward(...)`` ran since, with no ``x.grad = ...`` in between."""
    if not (isinstance(alias, cst.Name) and isinstance(grad, cst.Attribute) and
            grad.attr.value == "grad" and _pure(grad)):
        return None
    grad_text = "".join(block.code(grad).split())
    frame = site.frames[-1]
    backward_since = False
    for index in range(frame.index - 1, -1, -1):
        stmt = frame.statements[index]
        if not isinstance(stmt, cst.SimpleStatementLine):
            return None  # a branch or a loop in between: cannot follow
        for small in reversed(stmt.body):
            if isinstance(small, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
                targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) \
                    else [small.target]
                texts = {"".join(block.code(t).split()) for t in targets}
                if alias.value in texts:
                    value = small.value
                    if isinstance(small, cst.Assign) and value is not None and \
                            "".join(block.code(value).split()) == grad_text and backward_since:
                        return alias.value, " ".join(block.code(grad).split())
                    return None
                if grad_text in texts:
                    return None  # `x.grad = None` resets the alias
            for call in StatementExpressions.of(cst.SimpleStatementLine(body=[small]), cst.Call):
                assert isinstance(call, cst.Call)
                if _accumulates_into_grads(block, call, site):
                    backward_since = True
    return None
