from __future__ import annotations

from typing import Iterator

import libcst as cst

from ...analysis import torch_ops
from ...analysis.block import BlockAnalysis
from ...analysis.checked_code import Region, calls_with_context, regions
from ...analysis.scopes import ModuleContext
from ...analysis.test_context import expects_exception
from ...analysis.traverse import visit
from ...findings import Severity
from .. import edits
from ..base import MENTIONS_GRADCHECK, Invalid, Report, Rule, Valid


class RandomOpInCheckedFunction(Rule):
    """## What it does
    Checks the function given to `gradcheck`/`gradgradcheck` (a lambda, a function of
    the module, or `MyFn.apply` and the `forward` of the Functions it applies) for
    random ops: `torch.rand*`/`randn*`/`randint`/`randperm`/`bernoulli`/`multinomial`/
    `normal`/`poisson`, the in-place samplers (`.uniform_()`, `.normal_()`,
    `.bernoulli_()`...), and `F.dropout` (and its variants) in training mode, which is
    their default. An `nn.Module` given to gradcheck is checked too when it is built in
    the same function (`model = nn.Sequential(..., nn.Dropout(0.5)).double()`) and used
    nowhere else: a module starts in training mode, so its dropout draws at every
    evaluation unless `model.eval()` is called (any other use of `model` makes it unknown).

    ## Why is this bad?
    gradcheck evaluates the function many times, perturbing one input element at a
    time, and differences the outputs. If each evaluation draws new random numbers, the
    differences measure the noise: measured with torch 2.13, `F.dropout(t, 0.5)`,
    `t * torch.rand_like(t)`, `t + torch.randn(3)`, `t * torch.bernoulli(p)`,
    `t[torch.randperm(3)]`, `multinomial` and `rrelu(training=True)` all raise
    `GradcheckError: Jacobian mismatch for output 0 with respect to input 0` with
    numerical entries around 1e5 to 1e6, for a correct backward. With
    `training=False`, `p=0`, or a seed set inside the function (`torch.manual_seed`, or
    a `generator=` made inside), the function is deterministic and passes; those cases
    are not reported.

    ## Example
    ```python
    gradcheck(lambda x: F.dropout(x, 0.5), (x,))
    ```

    Use instead:
    ```python
    def f(x):
        torch.manual_seed(0)  # the same mask at every evaluation
        return F.dropout(x, 0.5)

    gradcheck(f, (x,))
    ```

    ## Fix safety
    No fix: whether to seed, to pass the noise as an input, or to check in eval mode is
    the author's choice.
    """

    code = "GL018"
    name = "random-op-in-checked-function"
    severity = Severity.ERROR
    summary = "the function under gradcheck draws random numbers (dropout, torch.rand...)"
    requires = MENTIONS_GRADCHECK
    requires_gradcheck_aliases = True

    VALID = [
        Valid("""
            import torch
            import torch.nn.functional as F
            torch.autograd.gradcheck(lambda t: F.dropout(t, 0.5, training=False), (x,))
            """),
        Valid("""
            import torch
            import torch.nn.functional as F
            torch.autograd.gradcheck(lambda t: F.dropout(t, p=0.0), (x,))
            """),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            def test_dropout():
                x = torch.randn(8, dtype=torch.float64, requires_grad=True)
                torch.autograd.gradcheck(lambda t: F.dropout(t, 0.5), (x,))
            """,
            message="the function under gradcheck calls `F.dropout(t, 0.5)`, which draws random "
                    "numbers at every evaluation (dropout is random unless training=False): the "
                    "numerical Jacobian measures the noise",
            range=(5, 40, 5, 57),
        ),
        Invalid(
            """
            import torch
            class NoisyScale(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    noise = torch.randn_like(x)
                    ctx.save_for_backward(noise)
                    return x * noise

                @staticmethod
                def backward(ctx, g):
                    noise, = ctx.saved_tensors
                    return g * noise

            def test(x):
                torch.autograd.gradcheck(NoisyScale.apply, (x,))
            """,
            message="the function under gradcheck calls `torch.randn_like(x)` (in "
                    "`NoisyScale.forward`), which draws random numbers at every evaluation: the "
                    "numerical Jacobian measures the noise",
            range=(15, 30, 15, 46),
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        for call in block.gradcheck_calls:
            if expects_exception(call.site):
                continue  # a test of torch's error: the mistake is on purpose
            module = _module_in_training(block, call)
            if module is not None:
                name, dropout = module
                message = (f"the module under gradcheck (`{name}`) holds `{_short(block, dropout)}` and is "
                           f"in training mode (modules start so): dropout draws random numbers at every "
                           f"evaluation, and the numerical Jacobian measures the noise; call "
                           f"`{name}.eval()` first")
                assert call.func is not None
                yield Report(call.func.value, message, call.site)
                continue
            code = block.checked_code(call)
            if code is None:
                continue
            for region in regions(code):
                found = _random_call(block.context, region)
                if found is None:
                    continue
                node, why = found
                where = f" (in `{region.function.name}.forward`)" if region.function is not None else ""
                message = (f"the function under gradcheck calls `{_short(block, node)}`{where}, which "
                           f"draws random numbers at every evaluation{why}: the numerical Jacobian "
                           f"measures the noise")
                inline = edits.contains(call.node, node)
                assert code.func is not None
                yield Report(node if inline else code.func, message, call.site)
                break


def _short(block: BlockAnalysis, node: cst.CSTNode) -> str:
    text = " ".join(block.code(node).split())
    return text if len(text) <= 48 else text[:47] + "…"


def _random_call(context: ModuleContext, region: Region) -> tuple[cst.Call, str] | None:
    calls = calls_with_context(region.body)
    qualified = [(c.call, context.qualified(c.call.func, region.scope), c.conditional) for c in calls]
    if any(name in torch_ops.SEEDING_FUNCTIONS for _, name, _ in qualified):
        return None
    for node, name, conditional in qualified:
        if conditional:
            continue  # `if self.training: ...`: it may not run
        if _keyword(node, "generator") is not None or any(a.star == "**" for a in node.args):
            continue  # a generator (maybe in `**options`): a seeded draw
        if name in torch_ops.RANDOM_FUNCTIONS:
            return node, ""
        if name in torch_ops.DROPOUT_FUNCTIONS and _dropout_is_random(node):
            return node, " (dropout is random unless training=False)"
        if name in torch_ops.RRELU and _is_true(_keyword(node, "training")):
            return node, ""
        if name is None and isinstance(node.func, cst.Attribute) and \
                node.func.attr.value in torch_ops.RANDOM_METHODS and \
                context.qualified(node.func.value, region.scope) is None:
            return node, ""
    return None


def _dropout_is_random(call: cst.Call) -> bool:
    positional = [a for a in call.args if a.keyword is None]
    if any(a.star for a in call.args):
        return False
    p = _keyword(call, "p") or (positional[1].value if len(positional) > 1 else None)
    if isinstance(p, (cst.Integer, cst.Float)) and float(p.value) == 0.0:
        return False
    training = _keyword(call, "training") or (positional[2].value if len(positional) > 2 else None)
    return training is None or _is_true(training)


def _keyword(call: cst.Call, name: str) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None


def _is_true(node: cst.BaseExpression | None) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


_DROPOUT_MODULES = frozenset({"torch.nn.Dropout", "torch.nn.Dropout1d", "torch.nn.Dropout2d",
                              "torch.nn.Dropout3d", "torch.nn.AlphaDropout", "torch.nn.FeatureAlphaDropout",
                              "torch.nn.modules.dropout.Dropout"})
_CONTAINERS = frozenset({"torch.nn.Sequential", "torch.nn.ModuleList"})
# methods that return the module itself and keep its training mode
_KEEP_TRAINING = frozenset({"double", "float", "half", "to", "cpu", "cuda", "requires_grad_", "type"})


def _module_in_training(block: BlockAnalysis, call) -> tuple[str, cst.Call] | None:
    """``gradcheck(model, ...)`` with ``model = nn.Sequential(..., nn.Dropout(0.5)).double()``
    bound once before the call in the same function, and ``model`` used nowhere else (no
    ``.eval()``, no other code that could switch it): (name, the dropout constructor)."""
    if call.func is None or not isinstance(call.func.value, cst.Name) or call.via is not None:
        return None
    name = call.func.value.value
    scope = call.site.scope
    if scope.kind != "function" or not call.site.frames:
        return None
    binding = scope.table.single_assignment(name)
    if binding is None or binding.value is None:
        return None
    position = next((i for i, stmt in enumerate(scope.statements) if isinstance(stmt, cst.SimpleStatementLine)
                     and any(small is binding.node for small in stmt.body)), None)
    if position is None or position >= call.site.frames[0].index:
        return None
    uses = []

    class Uses(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            if node.value == name:
                uses.append(node)

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            visit(node.value, self)
            return False

        def visit_Arg(self, node: cst.Arg) -> bool:
            visit(node.value, self)
            return False

    for stmt in scope.statements:
        visit(stmt, Uses())
    if len(uses) != 2:  # the binding and the gradcheck call
        return None
    value = binding.value
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and \
            value.func.attr.value in _KEEP_TRAINING:
        value = value.func.value
    if not isinstance(value, cst.Call):
        return None
    dropout = _random_dropout_in(block.context, value, scope)
    return (name, dropout) if dropout is not None else None


def _random_dropout_in(context: ModuleContext, node: cst.Call, scope) -> cst.Call | None:
    qualified = context.qualified(node.func, scope)
    if qualified in _DROPOUT_MODULES:
        if any(a.star for a in node.args):
            return None
        p = _keyword(node, "p") or (node.args[0].value if node.args and node.args[0].keyword is None else None)
        if p is None or (isinstance(p, (cst.Integer, cst.Float)) and float(p.value) > 0.0):
            return node
        return None
    if qualified in _CONTAINERS:
        for arg in node.args:
            if arg.star or arg.keyword is not None:
                continue
            inner = arg.value
            elements = [e.value for e in inner.elements] if isinstance(inner, (cst.List, cst.Tuple)) else [inner]
            for element in elements:
                if isinstance(element, cst.Call):
                    found = _random_dropout_in(context, element, scope)
                    if found is not None:
                        return found
    return None
