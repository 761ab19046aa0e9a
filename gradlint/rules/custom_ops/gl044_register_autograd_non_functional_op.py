from __future__ import annotations

from typing import Iterator

from ...analysis.block import BlockAnalysis
from ...analysis.custom_ops import CREATES_CUSTOM_OP
from ...analysis.op_types import parse_schema
from ...analysis.scopes import real_site
from ...findings import Severity
from .helpers import op_label
from ..base import MENTIONS_TORCH_LIBRARY, Invalid, Report, Rule, Valid


class RegisterAutogradNonFunctionalOp(Rule):
    """## What it does
    Checks `register_autograd` calls on custom ops that are not *functional*: an op that
    mutates an input (`mutates_args` lists one, or is `"unknown"`, or its schema has
    `Tensor(a!)`), or that returns nothing (`-> None`, schema `-> ()`).

    ## Why is this bad?
    `register_autograd` raises when it runs, at import (torch 2.13): `RuntimeError: Cannot
    register autograd formula for non-functional operator <CustomOpDef(mylib::f)> with
    schema mylib::f(Tensor(a0!) x) -> (). Please create a functional operator and register
    an autograd formula for that.` An op returning nothing has no output to differentiate;
    a mutating op needs a functional twin (write into a new tensor and return it), and the
    autograd formula goes on that twin.

    ## Example
    ```python
    @torch.library.custom_op("mylib::sin_", mutates_args=("x",))
    def sin_(x: torch.Tensor) -> None:
        x.sin_()

    sin_.register_autograd(backward, setup_context=setup_context)
    ```

    Use instead:
    ```python
    @torch.library.custom_op("mylib::sin", mutates_args=())
    def sin(x: torch.Tensor) -> torch.Tensor:
        return x.sin()

    sin.register_autograd(backward, setup_context=setup_context)
    ```

    ## Fix safety
    There is no fix.
    """

    code = "GL044"
    name = "register-autograd-non-functional-op"
    severity = Severity.ERROR
    summary = "register_autograd on a custom op that mutates an input or returns nothing"
    requires = MENTIONS_TORCH_LIBRARY
    requires_in_code = True
    requires_custom_op_parts = True
    requires_in_file = CREATES_CUSTOM_OP

    VALID = [
        Valid("""
            import torch

            @torch.library.custom_op("mylib::sin", mutates_args=())
            def sin(x: torch.Tensor) -> torch.Tensor:
                return x.sin()

            def backward(ctx, grad):
                return grad

            sin.register_autograd(backward)
            """),
    ]
    INVALID = [
        Invalid(
            """
            import torch

            @torch.library.custom_op("mylib::sin_", mutates_args=("x",))
            def sin_(x: torch.Tensor) -> None:
                x.sin_()

            def backward(ctx, grad):
                return grad

            sin_.register_autograd(backward)
            """,
            message="register_autograd on custom op `mylib::sin_`, which mutates x and returns "
                    "nothing: torch raises `RuntimeError: Cannot register autograd formula for "
                    "non-functional operator` when this line runs; register it on a functional op "
                    "(no mutated inputs, at least one output)",
            range=(10, 1, 10, 33),
        ),
        Invalid(
            """
            import torch

            @torch.library.custom_op("mylib::add_into", mutates_args=())
            def add_into(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> None:
                torch.add(a, b, out=out)

            def backward(ctx, grad):
                return grad, grad, None

            torch.library.register_autograd("mylib::add_into", backward)
            """,
            message="register_autograd on custom op `mylib::add_into`, which returns nothing: "
                    "torch raises `RuntimeError: Cannot register autograd formula for "
                    "non-functional operator` when this line runs; register it on a functional op "
                    "(no mutated inputs, at least one output)",
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        for op in block.custom_op_parts:
            registration = op.backward
            if registration is None or not block.holds(registration.site) or op.params is None:
                continue
            mutated = [p.name for p in op.params if p.mutable]
            if op.mutates_args is not None and op.mutates_args.unknown:
                mutated = mutated or ["its inputs (mutates_args=\"unknown\")"]
            returns_nothing = False
            if op.schema is not None:
                schema = parse_schema(op.schema)
                returns_nothing = schema is not None and schema.returns.strip() == "()"
            elif op.infers_schema:
                returns_nothing = op.return_verdict.schema_type == "()"
            if not mutated and not returns_nothing:
                continue
            what = []
            if mutated:
                what.append("mutates " + ", ".join(mutated))
            if returns_nothing:
                what.append("returns nothing")
            site = real_site(registration.site)
            if site is None:
                continue
            message = (f"register_autograd on custom op {op_label(op)}, which {' and '.join(what)}: "
                       f"torch raises `RuntimeError: Cannot register autograd formula for "
                       f"non-functional operator` when this line runs; register it on a "
                       f"functional op (no mutated inputs, at least one output)")
            yield Report(registration.node, message, site)
