from __future__ import annotations

from typing import Iterator

import libcst as cst

from ...analysis.codegen import node_code
from ...analysis import torch_ops
from ...analysis.block import BlockAnalysis
from ...analysis.checked_code import calls_in
from ...analysis.scopes import ModuleContext, Scope
from ...analysis.test_context import expects_exception
from ...findings import Severity
from ..base import MENTIONS_GRADCHECK, Invalid, Report, Rule, Valid


class NondeterministicBackwardWithoutNondetTol(Rule):
    """## What it does
    Checks for `gradcheck`/`gradgradcheck` calls without `nondet_tol` on code that
    applies a custom Function whose `backward` accumulates with `index_add_`,
    `scatter_add_`, `index_put_(..., accumulate=True)` or `put_(..., accumulate=True)`
    (and their out-of-place forms). A hint.

    ## Why is this bad?
    gradcheck runs backward twice on the same inputs and requires the two results to be
    bitwise equal unless `nondet_tol` says otherwise ("reentrant" check). On CUDA these
    ops accumulate with atomics, in an order that changes from run to run (they are in
    the nondeterministic list of `torch.use_deterministic_algorithms`), so the check can
    fail with `GradcheckError: Backward is not reentrant, i.e., running backward with
    same input and grad_output multiple times gives different values, although
    analytical gradient matches numerical gradient.The tolerance for nondeterminism was
    0.0.` for a correct gradient, intermittently. On CPU they are deterministic:
    measured with torch 2.13, an `index_add_` backward with repeated indices passes
    gradcheck on CPU (this machine has no GPU to measure the CUDA side). gradlint's
    "Run gradcheck" checks determinism by running backward twice and reports a
    nondeterministic backward on its own, which is the proof for a given device.

    ## Example
    ```python
    gradcheck(Gather.apply, (src.cuda(), index.cuda()))  # backward uses index_add_
    ```

    Use instead:
    ```python
    gradcheck(Gather.apply, (src.cuda(), index.cuda()), nondet_tol=1e-10)
    ```

    ## Fix safety
    No fix: the tolerance depends on the sizes and dtypes involved; the check may also
    be meant to run on CPU only, where it is deterministic.
    """

    code = "GL027"
    name = "nondeterministic-backward-without-nondet-tol"
    severity = Severity.HINT
    summary = "gradcheck without nondet_tol on a backward that accumulates with atomics on CUDA"
    requires = MENTIONS_GRADCHECK
    requires_gradcheck_aliases = True

    VALID = [
        Valid("""
            import torch
            class Take(torch.autograd.Function):
                @staticmethod
                def forward(ctx, src, index):
                    ctx.save_for_backward(index)
                    ctx.size = src.shape[0]
                    return src[index]

                @staticmethod
                def backward(ctx, g):
                    index, = ctx.saved_tensors
                    out = g.new_zeros(ctx.size)
                    out.index_add_(0, index, g)
                    return out, None

            torch.autograd.gradcheck(Take.apply, (src, index), nondet_tol=1e-10)
            """),
        Valid("""
            import torch
            class Put(torch.autograd.Function):
                @staticmethod
                def forward(ctx, src, index):
                    ctx.save_for_backward(index)
                    return src[index]

                @staticmethod
                def backward(ctx, g):
                    index, = ctx.saved_tensors
                    out = g.new_zeros(8)
                    out.index_put_((index,), g, accumulate=False)
                    return out, None

            torch.autograd.gradcheck(Put.apply, (src, index))
            """, why="no accumulation"),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            class Take(torch.autograd.Function):
                @staticmethod
                def forward(ctx, src, index):
                    ctx.save_for_backward(index)
                    ctx.size = src.shape[0]
                    return src[index]

                @staticmethod
                def backward(ctx, g):
                    index, = ctx.saved_tensors
                    out = g.new_zeros(ctx.size)
                    out.index_add_(0, index, g)
                    return out, None

            def test_take(src, index):
                torch.autograd.gradcheck(Take.apply, (src, index))
            """,
            message="`Take.backward` accumulates with `out.index_add_(0, index, g)`, which uses "
                    "atomics on CUDA: two backward runs may differ in the last bits there and "
                    "gradcheck then fails (\"Backward is not reentrant\"); pass nondet_tol when "
                    "checking on CUDA",
            range=(17, 30, 17, 40),
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        for call in block.gradcheck_calls:
            if expects_exception(call.site):
                continue  # a test of torch's error: the mistake is on purpose
            if call.keyword("nondet_tol") is not None or call.may_pass("nondet_tol"):
                continue
            code = block.checked_code(call)
            if code is None:
                continue
            for function in code.functions:
                backward = function.backward
                if backward is None:
                    continue
                found = _accumulation(block.context, backward.scope.statements, backward.scope)
                if found is None:
                    continue
                text = " ".join(_code(found).split())
                message = (f"`{function.name}.backward` accumulates with `{text}`, which uses "
                           f"atomics on CUDA: two backward runs may differ in the last bits there "
                           f"and gradcheck then fails (\"Backward is not reentrant\"); pass "
                           f"nondet_tol when checking on CUDA")
                assert code.func is not None
                yield Report(code.func, message, call.site)
                break


def _code(node: cst.CSTNode) -> str:
    """Source of a node in another block (its own module's settings do not matter here)."""
    return node_code(node)


def _accumulation(context: ModuleContext, body, scope: Scope) -> cst.Call | None:
    for call in calls_in(body):
        func = call.func
        qualified = context.qualified(func, scope)
        if qualified is not None:
            if qualified in torch_ops.ACCUMULATING_FUNCTIONS and (
                    qualified != "torch.index_put" or _accumulates(call, 3)):
                return call
            continue
        if not isinstance(func, cst.Attribute):
            continue
        method = func.attr.value
        if method in torch_ops.ACCUMULATING_METHODS:
            return call
        if method in torch_ops.ACCUMULATE_KEYWORD_METHODS and _accumulates(call, 2):
            return call
    return None


def _accumulates(call: cst.Call, position: int) -> bool:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "accumulate":
            return isinstance(arg.value, cst.Name) and arg.value.value == "True"
    positional = [a for a in call.args if a.keyword is None]
    return len(positional) > position and isinstance(positional[position].value, cst.Name) and \
        positional[position].value.value == "True"
