from __future__ import annotations

from typing import Iterator

import libcst as cst

from ...analysis.codegen import node_code
from ...analysis import torch_api
from ...analysis.block import BlockAnalysis
from ...analysis.facts import OpaqueFact, TensorFact
from ...analysis.gradcheck_calls import GradcheckCall, InputElement, input_elements
from ...findings import Severity
from .. import edits
from ..base import MENTIONS_GRADCHECK, FixProposal, Invalid, Replacement, Report, Rule, Valid

_NON_TENSOR_KINDS = frozenset({"number", "none", "bool", "string", "device"})


class GradcheckWithoutRequiresGrad(Rule):
    """## What it does
    Checks that at least one input of a `gradcheck`/`gradgradcheck` call requires grad,
    when gradlint can see how every input was made.

    ## Why is this bad?
    gradcheck only differentiates with respect to inputs that require grad; the others
    are constants. With none, there is nothing to check, and torch 2.13 raises
    `ValueError: gradcheck expects at least one input tensor to require gradient, but none
    of them have requires_grad=True.` (even with `raise_exception=False`). Factories
    create tensors with `requires_grad=False` unless told otherwise, and gradcheck does
    not turn it on for you.

    ## Example
    ```python
    x = torch.randn(3, dtype=torch.float64)
    torch.autograd.gradcheck(torch.sin, (x,))
    ```

    Use instead:
    ```python
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    torch.autograd.gradcheck(torch.sin, (x,))
    ```

    ## Fix safety
    The fix adds `requires_grad=True` to the factory that makes each floating-point input
    (or appends `.requires_grad_()` when the tensor comes from an expression). Integer
    tensors cannot require grad and are left alone. The fix is safe when every edited
    tensor is made inside the gradcheck call, or is a local variable used only by
    gradcheck calls; otherwise it is unsafe: other code that uses the tensor (an in-place
    update, for example) may behave differently once it requires grad. A factory that
    also passes `**mapping` gets no `requires_grad=True` (the mapping may hold it: a
    keyword given twice is a TypeError), and one whose `**kwargs` may set `requires_grad`
    is not reported at all.

    ## References
    - [pytorch/pytorch#9192](https://github.com/pytorch/pytorch/pull/9192)
    """

    code = "GL002"
    name = "gradcheck-without-requires-grad"
    severity = Severity.ERROR
    summary = "no input of a gradcheck call requires grad (torch raises ValueError)"
    requires = MENTIONS_GRADCHECK
    requires_gradcheck_aliases = True

    VALID = [
        Valid("""
            import torch
            x = torch.randn(3, dtype=torch.float64, requires_grad=True)
            torch.autograd.gradcheck(torch.sin, (x,))
            """),
        Valid("""
            import torch
            x = torch.randn(3, dtype=torch.float64)
            w = torch.randn(3, dtype=torch.float64, requires_grad=True)
            torch.autograd.gradcheck(torch.mul, (x, w))
            """, why="one input that requires grad is enough"),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            from torch.autograd import gradcheck

            def test_exp():
                x = torch.randn(5, dtype=torch.float64)
                assert gradcheck(torch.exp, (x,))
            """,
            message="no input of this gradcheck call requires grad (`x`); torch raises ValueError",
            range=(6, 33, 6, 37),
            fixed="""
            import torch
            from torch.autograd import gradcheck

            def test_exp():
                x = torch.randn(5, dtype=torch.float64, requires_grad=True)
                assert gradcheck(torch.exp, (x,))
            """,
            applicability="safe",
        ),
        Invalid(
            """
            import torch
            a = torch.zeros(2, 2, dtype=torch.double, requires_grad=False)
            i = torch.tensor([0, 1])
            torch.autograd.gradgradcheck(lambda t, idx: t[idx], [a, i])
            """,
            message="no input of this gradgradcheck call requires grad (`a`, `i`); torch raises ValueError",
            range=(4, 53, 4, 59),
            fixed="""
            import torch
            a = torch.zeros(2, 2, dtype=torch.double, requires_grad=True)
            i = torch.tensor([0, 1])
            torch.autograd.gradgradcheck(lambda t, idx: t[idx], [a, i])
            """,
            applicability="unsafe",
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        for call in block.gradcheck_calls:
            elements = input_elements(call, block.evaluator)
            if not elements or not all(_known_without_grad(e) for e in elements):
                continue
            names = list(dict.fromkeys(f"`{e.expr.value}`" for e in elements
                                       if isinstance(e.expr, cst.Name)))
            listed = f" ({', '.join(names)})" if names and len(names) <= 4 else ""
            message = (f"no input of this {call.variant} call requires grad{listed}; "
                       f"torch raises ValueError")
            assert call.inputs is not None
            yield Report(call.inputs.value, message, call.site, _fix(block, call, elements))


def _known_without_grad(element: InputElement) -> bool:
    fact = element.fact
    if isinstance(fact, TensorFact):
        return fact.requires_grad is False
    return isinstance(fact, OpaqueFact) and fact.kind in _NON_TENSOR_KINDS


def _fix(block: BlockAnalysis, call: GradcheckCall, elements: list[InputElement]
         ) -> FixProposal | None:
    replacements: list[Replacement] = []
    names: list[str] = []
    safe = True
    allowed = edits.gradcheck_inputs(block, call.site.scope)
    for element in elements:
        fact = element.fact
        if not isinstance(fact, TensorFact) or fact.grad_origin is None:
            continue
        if fact.dtype not in torch_api.FLOATING | torch_api.COMPLEX:
            continue  # integer tensors cannot require grad; unknown dtypes may be integer
        origin = fact.grad_origin
        node = origin.node
        if origin.kind == "factory" and isinstance(node, cst.Call):
            new_call = edits.with_keyword(node, "requires_grad", cst.Name("True"))
            if new_call is None:
                continue  # beside `**mapping`: no keyword can be added safely
            new_text = node_code(new_call, block.module)
        elif origin.kind == "expression" and isinstance(node, cst.BaseExpression):
            new_text = edits.append_method(node, "requires_grad_", node_code(node, block.module))
        else:
            continue
        replacements.append(Replacement(node, new_text, origin.site))
        names.append(edits.short_label(element.expr, element.index))
        inline = element.inline and edits.contains(element.expr, node)
        if not inline:
            safe = safe and isinstance(element.expr, cst.Name) and not edits.used_elsewhere(
                call.site, element.expr.value, allowed)
    if not replacements:
        return None
    title = f"Set requires_grad=True on {', '.join(names)}"
    return FixProposal(title, edits.applicability(safe), tuple(replacements))
