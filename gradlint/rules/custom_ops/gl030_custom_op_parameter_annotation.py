from __future__ import annotations

from typing import Iterator

import libcst as cst

from ...analysis.codegen import node_code
from ...analysis import traverse
from ...analysis.block import BlockAnalysis
from ...analysis.custom_ops import CREATES_CUSTOM_OP, KEYWORD_ONLY, POSITIONAL, CustomOp, OpParameter
from ...analysis.names import statement_bindings
from ...analysis.op_types import annotation_expression
from ...analysis.scopes import ModuleContext
from ...findings import Applicability, Severity
from .helpers import op_label
from ..base import MENTIONS_TORCH_LIBRARY, FixProposal, Invalid, Replacement, Report, Rule, Valid


class CustomOpParameterAnnotation(Rule):
    """## What it does
    Checks the parameters of a function made into an operator with
    `torch.library.custom_op` (or `triton_op`) without an explicit `schema=`: torch infers
    the operator's schema from the annotations, so each parameter needs one from the short
    list `infer_schema` accepts:

    - `Tensor`, `int`, `float`, `bool`, `str`, `torch.types.Number` (`int | float | bool`),
      `torch.dtype`, `torch.device`;
    - `Optional[...]` (or `X | None`) of any of those;
    - `list[...]` / `Sequence[...]` of `Tensor`, `int`, `float`, `bool`, `Number`, and
      `list[Optional[Tensor]]`; `Optional[list[...]]` of `int`, `float`, `bool`.

    It reports a parameter without an annotation, an annotation torch rejects (tuples,
    `Any`, `list[str]`, `Optional[list[Tensor]]`, `torch.SymInt`, ...), `*args`, `**kwargs`
    and positional-only parameters, and a string annotation (or any annotation under `from
    __future__ import annotations`) naming something imported only under `if
    TYPE_CHECKING:`. An annotation gradlint cannot resolve (a class of yours, which may be
    registered as an opaque type) is not reported.

    ## Why is this bad?
    The decorator raises when the module is imported (torch 2.13), before any test runs:

    - `ValueError: infer_schema(func): Parameter x must have a type annotation. Got func
      with signature (x) -> torch.Tensor)`
    - `ValueError: infer_schema(func): Parameter dims has unsupported type tuple[int, ...].
      We do not support Tuple inputs in schema. As a workaround, please try to use List
      instead. For example, list[int]. ...`
    - `ValueError: infer_schema(func): We do not support positional-only args, varargs, or
      varkwargs. ...`
    - `ValueError: infer_schema(func): Unsupported type annotation Tensor. It is not a type.
      (name 'Tensor' is not defined). If you are using 'from __future__ import
      annotations', ...` (the annotation is evaluated in the module's globals).

    A method decorated with `custom_op` fails the same way on `self`.

    ## Example
    ```python
    @torch.library.custom_op("mylib::scale", mutates_args=())
    def scale(x: torch.Tensor, factors: tuple[float, ...]) -> torch.Tensor:
        ...
    ```

    Use instead:
    ```python
    @torch.library.custom_op("mylib::scale", mutates_args=())
    def scale(x: torch.Tensor, factors: list[float]) -> torch.Tensor:
        ...
    ```

    ## Fix safety
    `tuple[X, ...]` (or `Tuple[X, ...]`) becomes `list[X]`: an unsafe fix, as the
    function then receives a list where it received a tuple. Missing annotations have no
    fix: only you know the type.
    """

    code = "GL030"
    name = "custom-op-parameter-annotation"
    severity = Severity.ERROR
    summary = "a custom_op parameter without an annotation, or with one infer_schema rejects"
    requires = MENTIONS_TORCH_LIBRARY
    requires_in_code = True
    requires_custom_op_parts = True
    requires_in_file = CREATES_CUSTOM_OP

    VALID = [
        Valid("""
            import torch
            from typing import Optional, Sequence
            from torch import Tensor

            @torch.library.custom_op("mylib::blend", mutates_args=())
            def blend(x: Tensor, others: list[Tensor], w: Optional[Tensor], sizes: Sequence[int],
                      maybe: list[Optional[Tensor]], scale: float | None = None, *, mode: str = "a",
                      dtype: torch.dtype = torch.float32, n: torch.types.Number = 1) -> list[Tensor]:
                return [x.clone()]
            """, why="every supported form, keyword-only parameters included"),
        Valid("""
            from __future__ import annotations
            import torch
            from torch import Tensor

            @torch.library.custom_op("mylib::f", mutates_args=())
            def f(x: Tensor, k: int | None = None) -> Tensor:
                return x.sin()
            """, why="string annotations evaluated in the module's globals"),
    ]
    INVALID = [
        Invalid(
            """
            import torch

            @torch.library.custom_op("mylib::mysin", mutates_args=())
            def mysin(x) -> torch.Tensor:
                return x.sin()
            """,
            message="parameter `x` of custom op `mylib::mysin` has no type annotation: "
                    "torch.library.custom_op raises `ValueError: infer_schema(func): "
                    "Parameter x must have a type annotation.` when the module is imported",
            range=(4, 11, 4, 12),
        ),
        Invalid(
            """
            import torch

            @torch.library.custom_op("mylib::scale", mutates_args=())
            def scale(x: torch.Tensor, factors: tuple[float, ...]) -> torch.Tensor:
                return x * factors[0]
            """,
            message="parameter `factors` of custom op `mylib::scale` is annotated "
                    "`tuple[float, ...]`, which infer_schema rejects (ValueError when the module "
                    "is imported): tuples are not supported as inputs; use list[...] instead",
            range=(4, 37, 4, 54),
            fixed="""
            import torch

            @torch.library.custom_op("mylib::scale", mutates_args=())
            def scale(x: torch.Tensor, factors: list[float]) -> torch.Tensor:
                return x * factors[0]
            """,
            applicability="unsafe",
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        for op in block.custom_op_parts:
            function = op.function
            if not op.infers_schema or op.params is None or function is None or \
                    not isinstance(function.node, cst.FunctionDef) or not block.holds(function.site):
                continue
            for param in op.params:
                report = self._check_param(block, op, param)
                if report is not None:
                    yield Report(report[0], report[1], function.site, fix=report[2])

    def _check_param(self, block: BlockAnalysis, op: CustomOp, param: OpParameter):
        node = param.node
        if node is None:
            return None
        label = op_label(op)
        if param.kind not in (POSITIONAL, KEYWORD_ONLY):
            star = {"var_positional": "*", "var_keyword": "**"}.get(param.kind, "")
            advice = ""
            if param.kind == "var_positional" and param.annotation_text:
                advice = f"; use `{param.name}: list[{param.annotation_text}]`"
            return (node, f"parameter `{star}{param.name}` of custom op {label}: "
                          f"custom ops take no *args, **kwargs or positional-only parameters "
                          f"(`ValueError: infer_schema(func): We do not support positional-only "
                          f"args, varargs, or varkwargs.`){advice}", None)
        if param.annotation is None:
            return (node.name, f"parameter `{param.name}` of custom op {label} has no type "
                               f"annotation: torch.library.custom_op raises `ValueError: "
                               f"infer_schema(func): Parameter {param.name} must have a type "
                               f"annotation.` when the module is imported", None)
        hidden = _type_checking_only_name(param.annotation, block.context)
        if hidden is not None:
            return (param.annotation.annotation,
                    f"parameter `{param.name}` of custom op {label}: its annotation names "
                    f"`{hidden}`, which is imported only under `if TYPE_CHECKING:`; infer_schema "
                    f"evaluates the string annotation in the module's globals and raises "
                    f"`ValueError: infer_schema(func): Unsupported type annotation {hidden}. It "
                    f"is not a type. (name '{hidden}' is not defined)`", None)
        problem = param.verdict.problem
        if problem is None:
            return None
        text = " ".join((param.annotation_text or "").split())
        fix = _tuple_fix(param.annotation, block, op)
        return (param.annotation.annotation,
                f"parameter `{param.name}` of custom op {label} is annotated `{text}`, which "
                f"infer_schema rejects (ValueError when the module is imported): {problem}", fix)


def _tuple_fix(annotation: cst.Annotation, block: BlockAnalysis, op: CustomOp) -> FixProposal | None:
    expr = annotation.annotation
    if not isinstance(expr, cst.Subscript) or len(expr.slice) != 2:
        return None
    base = block.context.qualified(expr.value, op.function.site.scope) if op.function else None
    if isinstance(expr.value, cst.Name) and expr.value.value == "tuple":
        base = "builtins.tuple"
    if base not in ("builtins.tuple", "typing.Tuple"):
        return None
    first, second = (element.slice for element in expr.slice)
    if not isinstance(first, cst.Index) or not isinstance(second, cst.Index) or \
            not isinstance(second.value, cst.Ellipsis):
        return None
    element = node_code(first.value)
    assert op.function is not None
    return FixProposal(f"Annotate as `list[{element}]`", Applicability.UNSAFE,
                       (Replacement(expr, f"list[{element}]", op.function.site),))


def _type_checking_only_name(annotation: cst.Annotation, context: ModuleContext) -> str | None:
    """A name in a lazily evaluated annotation that is bound at module level only under
    ``if TYPE_CHECKING:``."""
    stringified = isinstance(annotation.annotation, (cst.SimpleString, cst.ConcatenatedString))
    if not stringified and not _future_annotations(context):
        return None
    expr = annotation_expression(annotation)
    if expr is None:
        return None
    hidden = _type_checking_names(context)
    if not hidden:
        return None
    finder = _Names()
    traverse.visit(expr, finder)
    for name in finder.names:
        if name in hidden:
            return name
    return None


class _Names(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: list[str] = []

    def visit_Name(self, node: cst.Name) -> None:
        self.names.append(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        traverse.visit(node.value, self)
        return False


def _future_annotations(context: ModuleContext) -> bool:
    """Does the module import ``annotations`` from ``__future__``? (Once per lint: asked
    for each parameter of each op.)"""
    known = context.models.get("future_annotations")
    if known is None:
        known = context.models["future_annotations"] = _imports_future_annotations(context)
    return known  # type: ignore[return-value]


def _imports_future_annotations(context: ModuleContext) -> bool:
    for stmt in context.statements:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.ImportFrom) and isinstance(small.module, cst.Name) and \
                        small.module.value == "__future__" and not isinstance(small.names, cst.ImportStar) \
                        and any(isinstance(a.name, cst.Name) and a.name.value == "annotations"
                                for a in small.names):
                    return True
    return False


def _type_checking_names(context: ModuleContext) -> frozenset[str]:
    """Module-level names bound only inside `if TYPE_CHECKING:` (not in its else), found
    once per lint."""
    known = context.models.get("type_checking_names")
    if known is None:
        known = context.models["type_checking_names"] = frozenset(_bound_under_type_checking(context))
    return known  # type: ignore[return-value]


def _bound_under_type_checking(context: ModuleContext) -> set[str]:
    inside: set[str] = set()
    for stmt in context.statements:
        if isinstance(stmt, cst.If) and \
                context.qualified(stmt.test, context.scope) in ("typing.TYPE_CHECKING",
                                                                 "typing_extensions.TYPE_CHECKING"):
            for inner in (stmt.body.body if isinstance(stmt.body, cst.IndentedBlock) else ()):
                inside.update(b.name for b in statement_bindings(inner))
    outside: set[str] = set()
    for name in inside:
        bindings = context.scope.table.bindings.get(name, [])
        if any(not _under_type_checking(b.node, context) for b in bindings):
            outside.add(name)
    return inside - outside


def _under_type_checking(node: cst.CSTNode, context: ModuleContext) -> bool:
    for stmt in context.statements:
        if isinstance(stmt, cst.If) and isinstance(stmt.body, cst.IndentedBlock) and \
                context.qualified(stmt.test, context.scope) in ("typing.TYPE_CHECKING",
                                                                 "typing_extensions.TYPE_CHECKING"):
            if any(inner is node for inner in stmt.body.body) or any(
                    isinstance(inner, cst.SimpleStatementLine) and any(s is node for s in inner.body)
                    for inner in stmt.body.body):
                return True
    return False
