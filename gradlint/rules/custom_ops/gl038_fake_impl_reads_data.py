from __future__ import annotations

from typing import Iterator

import libcst as cst

from ...analysis import traverse
from ...analysis.codegen import node_code
from ...analysis.block import BlockAnalysis
from ...analysis.custom_ops import CREATES_CUSTOM_OP, CustomOp, FunctionRef
from ...analysis.param_flow import ParamFlow
from ...analysis.scopes import real_site
from ...findings import Severity
from .helpers import nodes_of, op_label, op_params_of, site_in, tensor_kinds
from ..base import MENTIONS_TORCH_LIBRARY, Invalid, Report, Rule, Valid

# tensor methods and attributes that give metadata (shapes, dtypes), never data
_METADATA_METHODS = frozenset({
    "size", "dim", "numel", "stride", "storage_offset", "element_size", "nelement",
    "ndimension", "is_contiguous", "is_floating_point", "is_complex", "get_device", "type",
    "is_signed", "is_pinned", "is_shared", "has_names", "is_set_to", "data_ptr", "untyped_storage",
    "new_empty", "new_zeros", "new_ones", "new_full", "new_empty_strided", "new_tensor",
    "empty_like", "zeros_like", "ones_like",
})
_METADATA_ATTRIBUTES = frozenset({
    "shape", "dtype", "device", "ndim", "is_cuda", "is_cpu", "is_meta", "layout",
    "requires_grad", "names", "is_sparse", "is_quantized", "is_mkldnn", "is_nested",
    "itemsize", "nbytes", "grad_fn", "is_leaf",
})
_DATA_BOOL_METHODS = frozenset({"any", "all", "item", "equal", "allclose", "is_nonzero", "tolist"})
_DATA_BOOL_FUNCTIONS = frozenset({"torch.any", "torch.all", "torch.equal", "torch.allclose",
                                  "torch.is_nonzero"})
_TORCH_METADATA_FUNCTIONS = frozenset({"torch.numel", "torch.is_tensor", "torch.is_floating_point",
                                       "torch.is_complex", "torch.result_type", "torch.is_storage"})
_COMPARISONS = (cst.LessThan, cst.GreaterThan, cst.LessThanEqual, cst.GreaterThanEqual,
                cst.Equal, cst.NotEqual)

_GUARD = "Could not guard on data-dependent expression"


class FakeImplReadsData(Rule):
    """## What it does
    Checks the fake implementation of a custom op (`register_fake`, `impl_abstract`) for
    reads of tensor *values*, which fake tensors do not have: `.data_ptr()`, `.numpy()`,
    `.tolist()`, and Python control flow or conversions on values (`if x.sum() > 0:`,
    `while (x > 0).any():`, `assert torch.equal(a, b)`, `int(x.max())`). Metadata is fine
    (`x.shape`, `x.dim()`, `x.numel()`, `x.dtype`).

    ## Why is this bad?
    The fake implementation runs on FakeTensors (under `torch.compile`, `torch.export`,
    `opcheck`); eager tests never call it. Measured with torch 2.13 under `torch.compile`
    and `opcheck`:

    - `.data_ptr()`: `RuntimeError: Cannot access data pointer of Tensor (e.g. FakeTensor,
      FunctionalTensor). If you're using torch.compile/export/fx, it is likely that we are
      erroneously tracing into a custom kernel. ...` under `torch.compile` (opcheck fails
      `test_aot_dispatch_dynamic` with `Cannot call numel() on tensor with symbolic
      sizes/strides`);
    - `.numpy()`: `RuntimeError: .numpy() is not supported for tensor subclasses.`
    - `.tolist()`: `PendingUnbackedSymbolNotFound: Pending unbacked symbols {...} not in
      returned outputs ...`
    - a branch on a value: `Could not guard on data-dependent expression Eq(u0, 1)`.

    An output whose size depends on the data should get it from
    `torch.library.get_ctx().new_dynamic_size()` (`.item()` whose value only becomes an
    output size also works, and is not reported).

    ## Example
    ```python
    @nonzero.register_fake
    def _(x):
        n = int((x != 0).sum())
        return x.new_empty(n, x.dim(), dtype=torch.long)
    ```

    Use instead:
    ```python
    @nonzero.register_fake
    def _(x):
        n = torch.library.get_ctx().new_dynamic_size()
        return x.new_empty(n, x.dim(), dtype=torch.long)
    ```

    ## Fix safety
    There is no fix.
    """

    code = "GL038"
    name = "fake-impl-reads-data"
    severity = Severity.ERROR
    summary = "a custom op's fake implementation reads tensor data that fake tensors lack"
    requires = MENTIONS_TORCH_LIBRARY
    requires_in_code = True
    requires_custom_op_parts = True
    requires_in_file = CREATES_CUSTOM_OP

    VALID = [
        Valid("""
            import torch

            @torch.library.custom_op("mylib::pick", mutates_args=())
            def pick(x: torch.Tensor, n: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
                return x[: n.item()].clone()

            @pick.register_fake
            def _(x, n, bias=None):
                if x.dim() == 2 and x.shape[0] > 1 and x.numel() and bias is not None:
                    assert x.dtype == bias.dtype
                size = n.item()
                return x.new_empty(size)
            """, why="metadata only; `.item()` whose value becomes an output size works"),
        Valid("""
            import torch

            @torch.library.custom_op("mylib::nonzero", mutates_args=())
            def nonzero(x: torch.Tensor) -> torch.Tensor:
                return torch.nonzero(x)

            @nonzero.register_fake
            def _(x):
                n = torch.library.get_ctx().new_dynamic_size()
                return x.new_empty(n, x.dim(), dtype=torch.long)
            """),
    ]
    INVALID = [
        Invalid(
            """
            import torch

            @torch.library.custom_op("mylib::nonzero", mutates_args=())
            def nonzero(x: torch.Tensor) -> torch.Tensor:
                return torch.nonzero(x)

            @nonzero.register_fake
            def _(x):
                n = int((x != 0).sum())
                return x.new_empty(n, x.dim(), dtype=torch.long)
            """,
            message="fake implementation of custom op `mylib::nonzero` reads tensor data "
                    "(`int((x != 0).sum())`): fake tensors have none, and torch raises `Could not "
                    "guard on data-dependent expression` under torch.compile/export and opcheck; "
                    "for a data-dependent size use torch.library.get_ctx().new_dynamic_size()",
            range=(9, 9, 9, 28),
        ),
        Invalid(
            """
            import torch

            @torch.library.custom_op("mylib::norm", mutates_args=())
            def norm(x: torch.Tensor) -> torch.Tensor:
                return x / x.norm()

            @norm.register_fake
            def _(x):
                if x.sum() > 0:
                    return torch.empty_like(x)
                return torch.zeros_like(x)
            """,
            message="fake implementation of custom op `mylib::norm` reads tensor data "
                    "(`x.sum() > 0` decides a branch): fake tensors have none, and torch raises "
                    "`Could not guard on data-dependent expression` under torch.compile/export "
                    "and opcheck",
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        for op in block.custom_op_parts:
            if op.params is None:
                continue
            for registration in op.fakes:
                function = registration.function
                if function is not None and isinstance(function.node, cst.FunctionDef) and \
                        block.holds(function.site):
                    yield from _Reads(block, op, function).reports()


class _Reads:
    def __init__(self, block: BlockAnalysis, op: CustomOp, function: FunctionRef):
        assert isinstance(function.node, cst.FunctionDef)
        self.block = block
        self.op = op
        self.function = function
        self.node = function.node
        kinds = tensor_kinds(op_params_of(op, function.node))
        self.tensors = {name for name, kind in kinds.items() if kind == "tensor"}
        self.flow = ParamFlow(function.node, {n: "tensor" for n in self.tensors}, block.context,
                              function.scope)

    def reports(self) -> Iterator[Report]:
        if not self.tensors:
            return
        label = op_label(self.op)
        where = "under torch.compile/export and opcheck"
        reported: set[int] = set()
        for call, statement in nodes_of(self.node.body, cst.Call):
            func = call.func
            if not isinstance(func, cst.Attribute):
                continue
            method = func.attr.value
            message = None
            if method == "data_ptr":
                message = (f"fake implementation of custom op {label} calls `{_code(call)}`: fake "
                           f"tensors have no data, and torch raises `RuntimeError: Cannot access "
                           f"data pointer of Tensor (e.g. FakeTensor, FunctionalTensor)` {where}")
            elif method == "numpy" and self.tensor_valued(func.value):
                message = (f"fake implementation of custom op {label} calls `{_code(call)}`: fake "
                           f"tensors have no data, and torch raises `RuntimeError: .numpy() is "
                           f"not supported for tensor subclasses.` {where}")
            elif method == "tolist" and self.tensor_valued(func.value):
                message = (f"fake implementation of custom op {label} calls `{_code(call)}`: fake "
                           f"tensors have no data, and torch raises `PendingUnbackedSymbolNotFound`"
                           f" {where}; for a data-dependent size use "
                           f"torch.library.get_ctx().new_dynamic_size()")
            if message is not None:
                report = self._report(call, message, statement)
                if report is not None:
                    reported.add(id(call))
                    yield report
        for test, statement, how in self._decisions():
            if reported and any(id(n) in reported for n in _descendants(test)):
                continue
            message = (f"fake implementation of custom op {label} reads tensor data "
                       f"(`{_code(test)}`{how}): fake tensors have none, and torch raises `{_GUARD}` "
                       f"{where}")
            if how == "":
                message += "; for a data-dependent size use torch.library.get_ctx().new_dynamic_size()"
            report = self._report(test, message, statement)
            if report is not None:
                yield report

    def _report(self, node: cst.CSTNode, message: str, statement: cst.BaseStatement) -> Report | None:
        site = site_in(self.function, statement)
        site = real_site(site) if site is not None else None
        return Report(node, message, site) if site is not None else None

    def _decisions(self) -> Iterator[tuple[cst.BaseExpression, cst.BaseStatement, str]]:
        body = self.node.body
        for node, statement in nodes_of(body, cst.If):
            if self.data_dependent(node.test):
                yield node.test, statement, " decides a branch"
        for node, statement in nodes_of(body, cst.While):
            if self.data_dependent(node.test):
                yield node.test, statement, " decides a loop"
        for node, statement in nodes_of(body, cst.IfExp):
            if self.data_dependent(node.test):
                yield node.test, statement, " decides a branch"
        for node, statement in nodes_of(body, cst.Assert):
            if self.data_dependent(node.test):
                yield node.test, statement, " is asserted"
        for node, statement in nodes_of(body, cst.Call):
            if isinstance(node.func, cst.Name) and node.func.value in ("int", "float", "bool") and \
                    node.args and self.tensor_valued(node.args[0].value) and \
                    self.function.scope.binding_scope(node.func.value) is None:
                yield node, statement, ""

    @property
    def context(self):
        return self.block.context

    def data_dependent(self, expr: cst.BaseExpression) -> bool:
        """Does evaluating ``expr`` as a condition need tensor values?"""
        if isinstance(expr, cst.BooleanOperation):
            return self.data_dependent(expr.left) or self.data_dependent(expr.right)
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
            return self.data_dependent(expr.expression)
        if isinstance(expr, cst.Comparison):
            operands = [expr.left, *(c.comparator for c in expr.comparisons)]
            if all(isinstance(c.operator, _COMPARISONS) for c in expr.comparisons):
                return any(self.tensor_valued(o) for o in operands)
            return False
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Attribute) and func.attr.value in _DATA_BOOL_METHODS:
                return self.tensor_valued(func.value)
            name = self.context.qualified(func, self.function.scope)
            if name in _DATA_BOOL_FUNCTIONS:
                return any(self.tensor_valued(a.value) for a in expr.args)
        return False

    def tensor_valued(self, expr: cst.BaseExpression) -> bool:
        """Is ``expr`` a tensor computed from an input's values (or one of its values)?"""
        if isinstance(expr, cst.Name):
            return expr.value in self.flow.origin
        if isinstance(expr, cst.Attribute):
            if expr.attr.value in _METADATA_ATTRIBUTES:
                return False
            if expr.attr.value in ("T", "mT", "real", "imag", "data"):
                return self.tensor_valued(expr.value)
            return False
        if isinstance(expr, cst.Subscript):
            return self.tensor_valued(expr.value)
        if isinstance(expr, cst.BinaryOperation):
            return self.tensor_valued(expr.left) or self.tensor_valued(expr.right)
        if isinstance(expr, cst.UnaryOperation) and not isinstance(expr.operator, cst.Not):
            return self.tensor_valued(expr.expression)
        if isinstance(expr, cst.Comparison):
            return all(isinstance(c.operator, _COMPARISONS) for c in expr.comparisons) and \
                any(self.tensor_valued(o) for o in (expr.left, *(c.comparator for c in expr.comparisons)))
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Attribute):
                if func.attr.value in _METADATA_METHODS:
                    return False
                if self.context.qualified(func, self.function.scope) is not None:
                    name = self.context.qualified(func, self.function.scope) or ""
                    return name.startswith("torch.") and name not in _TORCH_METADATA_FUNCTIONS and \
                        not name.startswith(("torch.library.", "torch._library.")) and \
                        any(self.tensor_valued(a.value) for a in expr.args)
                return self.tensor_valued(func.value)
            name = self.context.qualified(func, self.function.scope) or ""
            if name.startswith("torch.") and name not in _TORCH_METADATA_FUNCTIONS:
                return any(self.tensor_valued(a.value) for a in expr.args)
        return False


def _code(node: cst.CSTNode) -> str:
    text = " ".join(node_code(node).split())
    return text if len(text) <= 40 else text[:39] + "…"


def _descendants(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    yield node
    for child in traverse.children(node):  # (libcst's node.children rebuilds the node)
        yield from _descendants(child)
