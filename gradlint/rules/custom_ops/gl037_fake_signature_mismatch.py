from __future__ import annotations

from typing import Iterator

import libcst as cst

from ...analysis.codegen import node_code
from ...analysis.block import BlockAnalysis
from ...analysis.custom_ops import CREATES_CUSTOM_OP, KEYWORD_ONLY, CustomOp, FunctionRef, OpParameter
from ...findings import Applicability, Severity
from .helpers import call_name, op_label
from ..base import MENTIONS_TORCH_LIBRARY, FixProposal, Invalid, Replacement, Report, Rule, Valid


class FakeSignatureMismatch(Rule):
    """## What it does
    Checks that the fake implementation registered for a custom op (`@op.register_fake`,
    `torch.library.register_fake`, `impl_abstract`) accepts every call torch makes to it.
    torch calls it the way the op was called: the positional parameters by position (the
    fake's names for them do not matter), the keyword-only ones by name, and parameters
    left at their defaults may be left out (the dispatcher drops them).

    ## Why is this bad?
    The fake implementation runs only under `torch.compile`, `torch.export`, FX tracing and
    `torch.library.opcheck`, so eager tests pass. Measured with torch 2.13: a fake taking
    `(x)` for an op `f(x, y)` makes `torch.compile` fail with `torch._dynamo.exc.Unsupported:
    TypeError when making fake tensor call ... TypeError c7.f.default: _() takes 1
    positional argument but 2 were given`, and opcheck with `test_faketensor failed with _()
    takes 1 positional argument but 2 were given`. A renamed keyword-only parameter gives
    `_() got an unexpected keyword argument 'alpha'`; a fake without the default of the op's
    `alpha: float = 1.0` gives `_() missing 1 required positional argument: 'alpha'` for
    calls that leave `alpha` out.

    ## Example
    ```python
    @torch.library.custom_op("mylib::mul", mutates_args=())
    def mul(x: torch.Tensor, y: torch.Tensor, *, alpha: float = 1.0) -> torch.Tensor:
        return x * y * alpha

    @mul.register_fake
    def _(x, y):
        return torch.empty_like(x)
    ```

    Use instead:
    ```python
    @mul.register_fake
    def _(x, y, *, alpha=1.0):
        return torch.empty_like(x)
    ```

    ## Fix safety
    A missing default is added (the op's own): safe. Other mismatches have no fix.
    """

    code = "GL037"
    name = "fake-signature-mismatch"
    severity = Severity.ERROR
    summary = "a custom op's fake implementation does not accept the op's arguments"
    requires = MENTIONS_TORCH_LIBRARY
    requires_in_code = True
    requires_custom_op_parts = True
    requires_in_file = CREATES_CUSTOM_OP

    VALID = [
        Valid("""
            import torch

            @torch.library.custom_op("mylib::mul", mutates_args=())
            def mul(x: torch.Tensor, y: torch.Tensor, *, alpha: float = 1.0) -> torch.Tensor:
                return x * y * alpha

            @mul.register_fake
            def _(a, b, alpha=1.0, extra=None):
                return torch.empty_like(a)

            @torch.library.register_fake("mylib::mul")
            def _(*args, **kwargs):
                return torch.empty_like(args[0])
            """, why="positional names do not matter; a keyword-only one may be positional"),
        Valid("""
            import torch

            def test_one():
                @torch.library.custom_op("mylib::foo", mutates_args=())
                def foo(x: torch.Tensor) -> torch.Tensor:
                    return x.sin()

                @torch.library.register_fake("mylib::foo")
                def _(x):
                    return torch.empty_like(x)

            def test_two():
                @torch.library.custom_op("mylib::foo", mutates_args=())
                def foo(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
                    return x * y

                @torch.library.register_fake("mylib::foo")
                def _(x, y):
                    return torch.empty_like(x)
            """, why="tests that each define an op of the same name: a registration belongs to "
                     "the op of its own scope"),
    ]
    INVALID = [
        Invalid(
            """
            import torch

            @torch.library.custom_op("mylib::mul", mutates_args=())
            def mul(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
                return x * y

            @mul.register_fake
            def _(x):
                return torch.empty_like(x)
            """,
            message="fake implementation of custom op `mylib::mul` takes 1 positional parameter "
                    "but the op passes 2 (x, y): under torch.compile/export and opcheck torch "
                    "raises `TypeError: _() takes 1 positional argument but 2 were given`",
            range=(8, 7, 8, 8),
        ),
        Invalid(
            """
            import torch

            @torch.library.custom_op("mylib::scale", mutates_args=())
            def scale(x: torch.Tensor, *, alpha: float) -> torch.Tensor:
                return x * alpha

            @scale.register_fake
            def _(x, *, factor):
                return torch.empty_like(x)
            """,
            message="fake implementation of custom op `mylib::scale` does not accept the "
                    "keyword-only argument `alpha`: under torch.compile/export and opcheck torch "
                    "raises `TypeError: _() got an unexpected keyword argument 'alpha'`",
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        for op in block.custom_op_parts:
            if op.params is None or any(p.kind.startswith("var") for p in op.params):
                continue
            for registration in op.fakes:
                function = registration.function
                if function is not None and block.holds(function.site):
                    report = _check(op, function)
                    if report is not None:
                        yield report


def _check(op: CustomOp, function: FunctionRef) -> Report | None:
    node = function.node
    params = node.params
    name = call_name(function)
    label = op_label(op)
    assert op.params is not None
    positional = [p for p in op.params if p.kind != KEYWORD_ONLY]
    keyword_only = [p for p in op.params if p.kind == KEYWORD_ONLY]
    fake_positional = [*params.posonly_params, *params.params]
    takes_args = isinstance(params.star_arg, cst.Param)
    takes_kwargs = params.star_kwarg is not None
    target: cst.CSTNode = params if (fake_positional or params.kwonly_params) else node
    where = "under torch.compile/export and opcheck"

    def error(message: str, at: cst.CSTNode = target, fix: FixProposal | None = None) -> Report:
        return Report(at, message, function.site, fix=fix)

    if len(positional) > len(fake_positional) and not takes_args:
        count = len(fake_positional)
        with_default = sum(1 for p in fake_positional if p.default is not None)
        takes = (f"takes from {count - with_default} to {count} positional arguments" if with_default
                 else f"takes {count} positional argument{'s' if count != 1 else ''}")
        names = ", ".join(p.name for p in positional)
        return error(f"fake implementation of custom op {label} takes {count} positional "
                     f"parameter{'s' if count != 1 else ''} but the op passes {len(positional)} "
                     f"({names}): {where} torch raises `TypeError: {name}() {takes} but "
                     f"{len(positional)} were given`")
    by_name = {p.name.value: p for p in (*params.params, *params.kwonly_params)}
    for op_param in keyword_only:
        fake_param = by_name.get(op_param.name)
        if fake_param is None or (fake_param in fake_positional and
                                  fake_positional.index(fake_param) < len(positional)):
            if takes_kwargs:
                continue
            return error(f"fake implementation of custom op {label} does not accept the "
                         f"keyword-only argument `{op_param.name}`: {where} torch raises "
                         f"`TypeError: {name}() got an unexpected keyword argument "
                         f"'{op_param.name}'`")
    # parameters a call may leave out must have defaults in the fake too
    for index, fake_param in enumerate(fake_positional):
        if fake_param.default is not None:
            continue
        if index < len(positional):
            op_param: OpParameter | None = positional[index]
        else:
            op_param = next((p for p in keyword_only if p.name == fake_param.name.value), None)
            if op_param is None:
                return error(f"fake implementation of custom op {label} requires "
                             f"`{fake_param.name.value}`, which the op does not have: {where} "
                             f"torch raises `TypeError: {name}() missing 1 required positional "
                             f"argument: '{fake_param.name.value}'`", fake_param.name)
        if op_param is not None and op_param.has_default:
            return _missing_default(op, function, fake_param, op_param, name, "positional")
    for fake_param in params.kwonly_params:
        if fake_param.default is not None:
            continue
        op_param = next((p for p in keyword_only if p.name == fake_param.name.value), None)
        if op_param is None:
            return error(f"fake implementation of custom op {label} requires the keyword-only "
                         f"`{fake_param.name.value}`, which the op does not have: {where} torch "
                         f"raises `TypeError: {name}() missing 1 required keyword-only argument: "
                         f"'{fake_param.name.value}'`", fake_param.name)
        if op_param.has_default:
            return _missing_default(op, function, fake_param, op_param, name, "keyword-only")
    return None


def _missing_default(op: CustomOp, function: FunctionRef, fake_param: cst.Param,
                     op_param: OpParameter, name: str, kind: str) -> Report:
    message = (f"fake implementation of custom op {op_label(op)} requires `{op_param.name}`, which "
               f"has a default in the op: for a call that leaves it out, torch raises `TypeError: "
               f"{name}() missing 1 required {kind} argument: '{fake_param.name.value}'` under "
               f"torch.compile/export and opcheck")
    fix = None
    default = op_param.default_text
    if default is not None and op.style != "define":
        if fake_param.annotation is not None:
            code = node_code(fake_param.annotation.annotation)
            replacement = Replacement(fake_param.annotation.annotation, f"{code} = {default}",
                                      function.site)
        else:
            replacement = Replacement(fake_param.name, f"{fake_param.name.value}={default}",
                                      function.site)
        fix = FixProposal(f"Default `{fake_param.name.value}` to `{default}`", Applicability.SAFE,
                          (replacement,))
    return Report(fake_param.name, message, function.site, fix=fix)
