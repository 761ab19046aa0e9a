from __future__ import annotations

from typing import Iterator, Sequence

import libcst as cst

from ...analysis.codegen import node_code
from ...analysis.apply_calls import apply_uses
from ...analysis.autograd_functions import AutogradFunction, Method, gradient_names
from ...analysis.backward_returns import Returned, backward_returns, is_list, tuple_arithmetic
from ...analysis.block import BlockAnalysis
from ...findings import Applicability, Severity
from ..base import DEFINES_BACKWARD, FixProposal, Invalid, Replacement, Report, Rule, Valid


class BackwardGradientCount(Rule):
    """## What it does
    Checks that every `return` in the `backward` of a custom `torch.autograd.Function`
    gives one gradient per input of `forward` (without `ctx`), in both styles:
    `forward(ctx, *inputs)`, and `forward(*inputs)` with `setup_context(ctx, inputs,
    output)`. Returns that pass trailing `None`s beyond the inputs are reported as a
    hint (shown in editors, never failing `gradlint check`), or as a warning when the same
    backward also returns too few gradients somewhere or a gradient in another input's
    slot.

    With `forward(ctx, x, alpha=1.0)`, `apply` counts the arguments actually passed, so
    `backward` may return one or two values; with `setup_context`, `apply` binds the
    defaults and two are needed. Then the module's own `Scale.apply(...)` calls (without
    `*`, `**` or keywords) decide: a call passing another number of inputs than a return
    gives gradients (beyond trailing `None`s) is reported at that return. A
    `forward(ctx, *args)` is not checked. A list is one value to torch, however it is
    written: `[g, None]`, `[g] + [None] * 4`, a comprehension.

    ## Why is this bad?
    torch checks the count only when backward runs (not when `forward` is called), and
    then raises a plain `RuntimeError: function MyFnBackward returned an incorrect number
    of gradients (expected 2, got 1)`, which `gradcheck(raise_exception=False)` does not
    catch. Every input needs an entry: a gradient, or `None` for an input that is not
    differentiable (an int, a flag, a tensor that does not need grad). Extra trailing
    `None`s are silently dropped, which hides a `backward` that no longer matches its
    `forward`.

    ## Example
    ```python
    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, factor):
            ctx.factor = factor
            return x * factor

        @staticmethod
        def backward(ctx, grad):
            return grad * ctx.factor
    ```

    Use instead:
    ```python
    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, factor):
            ctx.factor = factor
            return x * factor

        @staticmethod
        def backward(ctx, grad):
            return grad * ctx.factor, None
    ```

    ## Fix safety
    Appending `None` for the missing inputs is safe when those parameters have a literal
    default (a number, string, bool or `None`: not a tensor); otherwise it is unsafe,
    because a missing gradient for a tensor input should be computed, not dropped.
    Removing extra trailing `None`s is safe: torch ignores them already.

    ## References
    - [Extending torch.autograd](https://docs.pytorch.org/docs/stable/notes/extending.html)
    """

    code = "GL004"
    name = "backward-gradient-count"
    severity = Severity.ERROR
    summary = "backward returns a different number of gradients than forward has inputs"
    requires = DEFINES_BACKWARD

    VALID = [
        Valid("""
            import torch
            class Mul(torch.autograd.Function):
                @staticmethod
                def forward(ctx, a, b):
                    ctx.save_for_backward(a, b)
                    return a * b

                @staticmethod
                def backward(ctx, grad):
                    a, b = ctx.saved_tensors
                    return grad * b, grad * a
            """),
        Valid("""
            import torch
            class LeakyReLU(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, slope=0.01):
                    ctx.save_for_backward(x)
                    ctx.slope = slope
                    return torch.where(x > 0, x, x * slope)

                @staticmethod
                def backward(ctx, grad):
                    x, = ctx.saved_tensors
                    return torch.where(x > 0, grad, grad * ctx.slope)
            """, why="apply(x) passes one argument, so one gradient is right"),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            class Weighted(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, w, a, b, c):
                    ctx.save_for_backward(x, w)
                    return x * w

                @staticmethod
                def backward(ctx, g):
                    x, w = ctx.saved_tensors
                    return (g * w, g * x) + (None,) * 2
            """,
            message="backward returns 4 gradients but forward takes 5 inputs (`x`, `w`, `a`, "
                    "`b`, `c`); torch raises RuntimeError when backward runs",
            fixed="""
            import torch
            class Weighted(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, w, a, b, c):
                    ctx.save_for_backward(x, w)
                    return x * w

                @staticmethod
                def backward(ctx, g):
                    x, w = ctx.saved_tensors
                    return (g * w, g * x) + (None,) * 2 + (None,)
            """,
            applicability="unsafe",
        ),
        Invalid(
            """
            import torch
            class Mul(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, y):
                    ctx.save_for_backward(x, y)
                    return x * y

                @staticmethod
                def backward(ctx, g):
                    x, y = ctx.saved_tensors
                    return [g * y, g * x]
            """,
            message="backward returns a list, which torch takes as one value (RuntimeError); "
                    "return a tuple with one gradient per input (`x`, `y`)",
            fixed="""
            import torch
            class Mul(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, y):
                    ctx.save_for_backward(x, y)
                    return x * y

                @staticmethod
                def backward(ctx, g):
                    x, y = ctx.saved_tensors
                    return (g * y, g * x)
            """,
            applicability="safe",
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        for function in block.autograd_functions:
            # (decorators on backward cannot change how many values its returns give)
            if function.backward is None or "backward" in function.inherited or \
                    "vjp" in function.inherited:
                continue
            signature = function.forward_inputs()
            if signature is None:
                continue
            params, required = signature
            total = len(params)
            returns = list(backward_returns(function.backward))
            # extra trailing Nones are harmless (a hint) unless this backward also has a
            # return with too few gradients or a gradient in another input's slot
            suspicious = any(r.count < required for r in returns) or any(
                _misplaced(r, params, function.backward) for r in returns)
            arities = _apply_arities(block, function) if required < total else {}
            for returned in returns:
                report = _check_return(block, function, returned, params, required, total,
                                       Severity.WARNING if suspicious else Severity.HINT)
                if report is None and required <= returned.count <= total:
                    report = _check_call_sites(returned, arities)
                if report is not None:
                    yield report


def _apply_arities(block: BlockAnalysis, function: AutogradFunction) -> dict[int, str]:
    """How many inputs the module's ``Cls.apply(...)`` calls pass (calls with ``*``/``**``
    or keywords are not counted): arity -> the first such call's text."""
    name = function.name
    found: dict[int, str] = {}
    for node in apply_uses(block.context, name).calls:
        if all(a.keyword is None and not a.star for a in node.args):
            text = node_code(node)
            found.setdefault(len(node.args), text if len(text) <= 60 else f"{name}.apply(...)")
    return found


def _check_call_sites(returned: Returned, arities: dict[int, str]) -> Report | None:
    """forward has defaulted inputs: a call that passes another number of inputs than
    backward returns gradients makes torch raise when its backward runs (extra trailing
    Nones are dropped)."""
    for arity, text in sorted(arities.items()):
        if arity != returned.count and not (arity < returned.count and returned.values is not None
                                            and all(_is_none(v) for v in returned.values[arity:])):
            message = (f"backward returns {_plural(returned.count, 'gradient')} but `{text}` passes "
                       f"{_plural(arity, 'input')}; torch raises RuntimeError when that call's "
                       f"backward runs")
            return Report(returned.node, message, returned.site)
    return None


def _names(params: Sequence[cst.Param]) -> str:
    return ", ".join(f"`{p.name.value}`" for p in params)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def _misplaced(returned: Returned, params: Sequence[cst.Param], backward: Method) -> bool:
    """A returned name that says it is the gradient of another input (`grad_w` in `x`'s slot)."""
    if returned.values is None:
        return False
    names = [p.name.value for p in params]
    own = {p.name.value for p in backward.params}
    for slot, value in enumerate(returned.values[: len(names)]):
        if isinstance(value, cst.Name) and value.value not in own:
            owners = [i for i, n in enumerate(names) if value.value in gradient_names(n)]
            if len(owners) == 1 and owners[0] != slot:
                return True
    return False


def _check_return(block: BlockAnalysis, function: AutogradFunction, returned: Returned,
                  params: Sequence[cst.Param], required: int, total: int,
                  extra_none_severity: Severity = Severity.HINT) -> Report | None:
    count = returned.count
    inputs = f"({_names(params)})" if params else ""
    value = returned.node.value
    if value is not None and is_list(value):
        message = (f"backward returns a list, which torch takes as one value (RuntimeError); "
                   f"return a tuple with one gradient per input {inputs}").rstrip()
        fix = None
        if isinstance(value, cst.List):
            elements = [cst.Element(e.value) for e in value.elements]
            new = cst.Tuple(elements, lpar=[cst.LeftParen()], rpar=[cst.RightParen()]) \
                if len(elements) != 1 else cst.Tuple(elements)
            if not any(isinstance(e, cst.StarredElement) for e in value.elements):
                fix = FixProposal("Return a tuple", Applicability.SAFE,
                                  (Replacement(value, block.code(new), returned.site),))
        elif isinstance(value, cst.BinaryOperation):  # `[g] + [None] * 4`
            fix = FixProposal("Return a tuple", Applicability.SAFE,
                              (Replacement(value, f"tuple({block.code(value)})", returned.site),))
        return Report(returned.node, message, returned.site, fix)
    if count < required:
        at_least = "at least " if required < total else ""
        message = (f"backward returns {_plural(count, 'gradient')} but forward takes "
                   f"{at_least}{_plural(required, 'input')} {inputs}; torch raises RuntimeError "
                   f"when backward runs")
        return Report(returned.node, message, returned.site,
                      _append_nones(block, returned, params, required))
    if count <= total:
        return None
    values = returned.values
    extras = values[total:] if values is not None else None
    if extras is not None and all(_is_none(v) for v in extras):
        message = (f"backward returns {count} values but forward takes {_plural(total, 'input')} "
                   f"{inputs}; torch ignores the extra trailing None")
        return Report(returned.node, message, returned.site, _drop_extras(block, returned, total),
                      severity=extra_none_severity)
    if extras is None:
        return None
    message = (f"backward returns {count} gradients but forward takes {_plural(total, 'input')} "
               f"{inputs}; torch raises RuntimeError when backward runs")
    return Report(returned.node, message, returned.site)


def _append_nones(block: BlockAnalysis, returned: Returned, params: Sequence[cst.Param],
                  required: int) -> FixProposal | None:
    value = returned.node.value
    if value is None or returned.values is None:
        return None
    missing = params[returned.count: required]
    safe = all(p.default is not None and _literal(p.default) for p in missing)
    nones = [cst.Element(cst.Name("None")) for _ in missing]
    if isinstance(value, cst.BinaryOperation) and tuple_arithmetic(value) is not None:
        # `(a, b) + (None,) * 2`: add one more tuple
        extra = ", ".join("None" for _ in missing) + ("," if len(missing) == 1 else "")
        title = "Return None for " + ", ".join(f"`{p.name.value}`" for p in missing)
        applicability = Applicability.SAFE if safe else Applicability.UNSAFE
        return FixProposal(title, applicability, (Replacement(
            value, f"{block.code(value)} + ({extra})", returned.site),))
    if isinstance(value, cst.Tuple):
        elements = list(value.elements)
        last = elements[-1]
        if value.lpar and len(elements) == 1 and isinstance(last.comma, cst.Comma):
            elements[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        elif isinstance(last.comma, cst.Comma):
            pass
        else:
            elements[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        new = value.with_changes(elements=[*elements, *nones])
    else:
        new = cst.Tuple([cst.Element(value), *nones], lpar=[], rpar=[])
    title = "Return None for " + ", ".join(f"`{p.name.value}`" for p in missing)
    applicability = Applicability.SAFE if safe else Applicability.UNSAFE
    return FixProposal(title, applicability, (Replacement(value, block.code(new), returned.site),))


def _drop_extras(block: BlockAnalysis, returned: Returned, total: int) -> FixProposal | None:
    value = returned.node.value
    if not isinstance(value, cst.Tuple) or total == 0:
        return None
    kept = list(value.elements[:total])
    if total == 1 and not value.lpar:
        new: cst.BaseExpression = kept[0].value
    else:
        kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT if total > 1 else
                                         cst.Comma())
        new = value.with_changes(elements=kept)
    return FixProposal("Remove the extra trailing None", Applicability.SAFE,
                       (Replacement(value, block.code(new), returned.site),))


def _literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString)):
        return True
    if isinstance(node, cst.UnaryOperation):
        return _literal(node.expression)
    return isinstance(node, cst.Name) and node.value in ("None", "True", "False")


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"
