#!/usr/bin/env python3
"""Recall of GL001-GL005 on single-bug mutants of real published code.

The packages of ``real_code_accuracy.py`` (same pinned versions, same cache outside the
repository) are searched for real gradcheck calls and real custom autograd Functions.
Each mutation operator below injects ONE classic mistake into a copy of a file's text;
gradlint (in-process, with the file's real path, so that ``conftest.py`` files and
configuration above it count) then lints the original and the mutant. A mutant is
*caught* when the mutant has a finding of the expected code that the original does not
have (compared by code and line: every operator edits within lines, so lines stay put).

The operators decide with their own small, deliberately simple and independent
reasoning (not gradlint's) where a mutation is certain to be a bug, and skip the places
where it is not (a tensor whose dtype comes from an unknown helper, a binary operation
with another float64 tensor, a forward with defaults...):

GL001 ``dtype64``     a ``dtype=torch.float64``/``torch.double`` that decides the dtype of
                      an input that requires grad becomes ``torch.float32``
      ``cast64``      the ``.double()`` (or ``.to(torch.float64)``) deciding it becomes
                      ``.float()`` (``.to(torch.float32)``)
      ``param64``     the float64 entry of a ``@pytest.mark.parametrize`` dtype list that
                      the input's ``dtype=`` reads becomes float32
      ``dropcast``    that ``.double()`` is removed from a tensor made with the default dtype
GL002 ``nograd``      every ``requires_grad=True`` / ``.requires_grad_()`` /
                      ``x.requires_grad = True`` that makes an input require grad is removed
GL003 ``spread``      ``gradcheck(f, (x, y))`` becomes ``gradcheck(f, x, y)``
      ``star``        ``gradcheck(f, inputs)`` with ``inputs = (x, y)`` becomes ``*inputs``
      ``posarg``      ``eps=1e-6`` becomes a positional argument
GL004 ``dropgrad``    the last gradient of a ``return`` in backward is removed
      ``extragrad``   a copy of the first gradient is appended to a ``return``
GL005 ``dropunpack``  ``a, b = ctx.saved_tensors`` is removed, so backward reads the
                      forward's names
      ``localref``    a tensor backward unpacked from ``ctx.saved_tensors`` is replaced, where
                      it is used, by a local variable of forward
      ``unpackcount`` one more name is unpacked from ``ctx.saved_tensors``
      ``index``       ``ctx.saved_tensors[i]`` reads one past the saved tensors

Usage::

    .venv/bin/python scripts/mutation_harness.py                 # all packages
    .venv/bin/python scripts/mutation_harness.py --only entmax --show-missed
    .venv/bin/python scripts/mutation_harness.py --torch --json /tmp/NAME-mutants.json
                                                  # + torch's own sources; per-mutant results

False findings per 1,000 lines of the unmodified code, by severity, come from the same
corpus: ``scripts/real_code_accuracy.py --torch --out /tmp/NAME-findings.json``.
"""

from __future__ import annotations

import argparse
import builtins
import json
import random
import re
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

sys.path.insert(0, str(Path(__file__).resolve().parent))
import real_code_accuracy as corpus  # noqa: E402

from gradlint.engine.config import ConfigResolver  # noqa: E402
from gradlint.engine.files import lint_text, options_for  # noqa: E402
from gradlint.engine.linter import LintCache  # noqa: E402

DEFAULT_FACTORIES = frozenset({"randn", "rand", "zeros", "ones", "empty", "eye", "linspace"})
RULES = ("GL001", "GL002", "GL003", "GL004", "GL005")
FLOAT64 = ("float64", "double")
FACTORIES = frozenset({
    "randn", "rand", "zeros", "ones", "empty", "eye", "linspace", "logspace", "tensor",
    "full", "arange", "randn_like", "rand_like", "zeros_like", "ones_like", "empty_like",
    "full_like", "normal", "as_tensor", "from_numpy",
})
# tensor methods that keep dtype and requires_grad (as far as the operators care)
KEEPING = frozenset({
    "to", "clone", "contiguous", "cpu", "cuda", "view", "reshape", "t", "transpose",
    "permute", "unsqueeze", "squeeze", "flatten", "expand", "abs", "exp", "neg", "sin",
    "cos", "tanh", "sigmoid", "clamp", "add", "sub", "mul", "div", "requires_grad_",
    "detach", "double", "float", "normal_", "uniform_", "fill_", "zero_", "repeat",
    "type", "sqrt", "log", "softmax", "sum", "mean",
})


@dataclass(frozen=True)
class Mutant:
    rule: str
    operator: str
    path: Path
    line: int
    text: str  # the whole mutated file
    where: str  # a short description


# -- small helpers (independent of gradlint's analysis) ----------------------------------
def dotted(node: cst.BaseExpression) -> str:
    parts = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        return ".".join(reversed(parts))
    return ""


def is_gradcheck_name(func: cst.BaseExpression) -> str | None:
    """torch's gradcheck/gradgradcheck, spelled the usual ways (a package's own function
    of the same name, like torchsde's `utils.gradcheck`, is not)."""
    text = dotted(func)
    name = text.split(".")[-1]
    if name not in ("gradcheck", "gradgradcheck"):
        return None
    if text in (name, f"autograd.{name}", f"torch.autograd.{name}", f"torch.autograd.gradcheck.{name}"):
        return name
    return None


def keyword(call: cst.Call, name: str) -> cst.Arg | None:
    return next((a for a in call.args if a.keyword is not None and a.keyword.value == name), None)


def is_float64(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Attribute) and node.attr.value in FLOAT64 and dotted(node.value) in ("torch", "th", "T")


class Walk(cst.CSTVisitor):
    """Functions, calls, classes, with parents."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self) -> None:
        self.stack: list[cst.CSTNode] = []
        self.calls: list[tuple[cst.Call, list[cst.CSTNode]]] = []
        self.classes: list[cst.ClassDef] = []
        self.functions: dict[str, list[cst.FunctionDef]] = defaultdict(list)

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.Call) and is_gradcheck_name(node.func):
            self.calls.append((node, list(self.stack)))
        if isinstance(node, cst.ClassDef):
            self.classes.append(node)
        if isinstance(node, cst.FunctionDef):
            self.functions[node.name.value].append(node)
        self.stack.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.stack.pop()


class FileModel:
    def __init__(self, path: Path, text: str):
        self.path = path
        self.text = text
        self.module = cst.parse_module(text)
        self.wrapper = MetadataWrapper(self.module, unsafe_skip_copy=True)
        self.positions = self.wrapper.resolve(PositionProvider)
        self.walk = Walk()
        self.module.visit(self.walk)

    def line(self, node: cst.CSTNode) -> int:
        return self.positions[node].start.line

    def replaced(self, old: cst.CSTNode, new: cst.CSTNode | cst.RemovalSentinel) -> str:
        return self.module.deep_replace(old, new).code  # type: ignore[arg-type]

    def replaced_many(self, pairs: list[tuple[cst.CSTNode, cst.CSTNode]]) -> str:
        mapping = {id(old): new for old, new in pairs}

        class Swap(cst.CSTTransformer):
            def on_leave(self, original, updated):
                return mapping.get(id(original), updated)

        return self.module.visit(Swap()).code


# -- tracing inputs back to where they are made (the operators' own, simple view) ---------
@dataclass
class Trace:
    dtype_decisions: list[cst.CSTNode]  # nodes that decide the final dtype (outermost last)
    grad_sources: list[cst.CSTNode]  # requires_grad=True args, .requires_grad_() calls, statements
    ok: bool = True
    default_base: bool = False  # made by a factory with torch's default dtype


def enclosing_function(stack: list[cst.CSTNode]) -> cst.FunctionDef | None:
    for node in reversed(stack):
        if isinstance(node, cst.FunctionDef):
            return node
    return None


def assignments(function_body: cst.CSTNode, name: str) -> list[tuple[cst.Assign, cst.SimpleStatementLine]]:
    found = []

    class Finder(cst.CSTVisitor):
        def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
            for small in node.body:
                if isinstance(small, cst.Assign):
                    for target in small.targets:
                        if isinstance(target.target, cst.Name) and target.target.value == name:
                            found.append((small, node))
                        elif isinstance(target.target, (cst.Tuple, cst.List)) and any(
                                isinstance(e.value, cst.Name) and e.value.value == name
                                for e in target.target.elements):
                            found.append((small, node))

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is function_body

        def visit_For(self, node: cst.For) -> bool:
            if name in {n.value for n in _names(node.target)}:
                found.append((None, None))  # type: ignore[arg-type]
            return True

    function_body.visit(Finder())
    return found


def _names(node: cst.CSTNode) -> list[cst.Name]:
    if isinstance(node, cst.Name):
        return [node]
    if isinstance(node, (cst.Tuple, cst.List)):
        return [n for e in node.elements for n in _names(e.value)]
    return []


def statements_mutating(function: cst.FunctionDef, name: str) -> list[tuple[cst.CSTNode, str]]:
    """`x.requires_grad_()` statements and `x.requires_grad = True` assignments."""
    found: list[tuple[cst.CSTNode, str]] = []

    class Finder(cst.CSTVisitor):
        def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
            for small in node.body:
                if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
                    func = small.value.func
                    if isinstance(func, cst.Attribute) and dotted(func.value) == name:
                        if func.attr.value == "requires_grad_":
                            found.append((small.value, "method"))
                        elif func.attr.value not in ("size", "numel", "dim"):
                            found.append((small.value, "other"))
                if isinstance(small, cst.Assign):
                    for target in small.targets:
                        t = target.target
                        if isinstance(t, cst.Attribute) and dotted(t.value) == name:
                            found.append((small, "attr-" + t.attr.value))

    function.body.visit(Finder())
    return found


class Tracer:
    def __init__(self, model: FileModel):
        self.model = model

    def trace(self, expr: cst.BaseExpression, function: cst.FunctionDef | None, before: int,
              depth: int = 0) -> Trace | None:
        """How ``expr`` (used at line ``before`` in ``function``) got its dtype and grad."""
        if depth > 8:
            return None
        if isinstance(expr, cst.Name):
            return self._name(expr.value, function, before, depth)
        if isinstance(expr, cst.BinaryOperation):
            left_number = isinstance(expr.left, (cst.Integer, cst.Float))
            right_number = isinstance(expr.right, (cst.Integer, cst.Float))
            if left_number == right_number:
                return None  # two tensors: mutating one need not change the result's dtype
            return self.trace(expr.right if left_number else expr.left, function, before, depth + 1)
        if isinstance(expr, cst.UnaryOperation):
            return self.trace(expr.expression, function, before, depth + 1)
        if isinstance(expr, cst.Call):
            func = expr.func
            name = dotted(func)
            if isinstance(func, cst.Attribute) and name.split(".")[0] in ("torch", "th", "T") and \
                    func.attr.value in FACTORIES and dotted(func.value) in ("torch", "th", "T"):
                trace = Trace([], [])
                dtype = keyword(expr, "dtype")
                trace.default_base = dtype is None and func.attr.value in DEFAULT_FACTORIES
                if dtype is not None:
                    if is_float64(dtype.value):
                        trace.dtype_decisions.append(dtype.value)
                    elif isinstance(dtype.value, cst.Name):
                        trace.dtype_decisions.append(dtype.value)  # a parameter: maybe parametrize
                    else:
                        trace.dtype_decisions.append(dtype)  # decided, but not float64
                grad = keyword(expr, "requires_grad")
                if grad is not None:
                    if isinstance(grad.value, cst.Name) and grad.value.value == "True":
                        trace.grad_sources.append(grad)
                    elif not (isinstance(grad.value, cst.Name) and grad.value.value == "False"):
                        return None
                return trace
            if isinstance(func, cst.Name) and not expr.args:
                helper = self.single_return(func.value)
                if helper is not None:  # `x = make_input()`: what the helper returns
                    node, value = helper
                    return self.trace(value, node, self.model.line(value) + 1, depth + 1)
            if isinstance(func, cst.Attribute) and not name.startswith(("torch.", "np.", "numpy.")):
                method = func.attr.value
                if method not in KEEPING:
                    return None
                inner = self.trace(func.value, function, before, depth + 1)
                if inner is None:
                    return None
                if method == "detach":
                    inner.grad_sources = []
                if method in ("double",):
                    inner.dtype_decisions.append(expr)
                if method == "float":
                    inner.dtype_decisions.append(expr)
                if method == "to" or method == "type":
                    target = expr.args[0].value if expr.args else None
                    dt = keyword(expr, "dtype")
                    if dt is not None:
                        target = dt.value
                    if target is not None and (is_float64(target) or dotted(target).startswith("torch.")
                                               and dotted(target).split(".")[-1] in ("float32", "float", "half")):
                        inner.dtype_decisions.append(expr)
                    elif target is not None and not (isinstance(target, cst.SimpleString)
                                                     or dotted(target) in ("device", "self.device")
                                                     or "device" in dotted(target)):
                        return None
                if method == "requires_grad_":
                    if expr.args and not (isinstance(expr.args[0].value, cst.Name)
                                          and expr.args[0].value.value == "True"):
                        return None
                    inner.grad_sources.append(expr)
                return inner
        return None

    def single_return(self, name: str, fixture: bool = False
                      ) -> tuple[cst.FunctionDef, cst.BaseExpression] | None:
        """A module-level function (or fixture) with one `return value` at its top level."""
        defs = [d for d in self.model.module.body if isinstance(d, cst.FunctionDef) and d.name.value == name]
        if len(defs) != 1:
            return None
        node = defs[0]
        is_fixture = any(dotted(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator)
                         .endswith("fixture") for d in node.decorators)
        if is_fixture != fixture or (node.decorators and not fixture) or node.params.params and not fixture:
            return None
        if fixture and any(isinstance(d.decorator, cst.Call) and keyword(d.decorator, "params")
                           for d in node.decorators):
            return None
        returns = returns_of(node)
        body = _body_statements(node)
        if len(returns) != 1 or returns[0].value is None or not body or \
                not isinstance(body[-1], cst.SimpleStatementLine) or returns[0] not in body[-1].body:
            return None
        if "yield" in self.model.module.code_for_node(node):
            return None
        return node, returns[0].value

    def _name(self, name: str, function: cst.FunctionDef | None, before: int, depth: int
              ) -> Trace | None:
        if function is None:
            return None
        found = assignments(function, name)
        params = {p.name.value for p in function.params.params}
        if not found and name in params:
            fixture = self.single_return(name, fixture=True)
            if fixture is not None:  # a pytest fixture of the same module
                node, value = fixture
                return self.trace(value, node, self.model.line(value) + 1, depth + 1)
        if not found or any(a is None for a, _ in found):
            return None
        earlier = [(a, line) for a, line in found if self.model.line(line) < before]
        if not earlier or len(earlier) != len([f for f in found if self.model.line(f[1]) < before]):
            return None
        assign, line = earlier[-1]
        if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
            return None
        # the statement must be straight-line in the function body (not in a branch/loop)
        if line not in _body_statements(function):
            return None
        trace = self.trace(assign.value, function, self.model.line(line), depth + 1)
        if trace is None:
            return None
        # later statements on the name
        for node, kind in statements_mutating(function, name):
            at = self.model.line(node)
            if not (self.model.line(line) < at < before):
                continue
            if kind == "method":
                trace.grad_sources.append(node)
            elif kind == "attr-requires_grad":
                value = node.value  # type: ignore[union-attr]
                if isinstance(value, cst.Name) and value.value == "True":
                    trace.grad_sources.append(node)
                else:
                    return None
            elif kind in ("attr-data",) or kind == "other":
                return None
        return trace


def _body_statements(function: cst.FunctionDef) -> list[cst.CSTNode]:
    body = function.body
    return list(body.body) if isinstance(body, cst.IndentedBlock) else []


# -- operators -----------------------------------------------------------------------------
def input_expressions(model: FileModel, call: cst.Call, function: cst.FunctionDef | None
                      ) -> list[cst.BaseExpression] | None:
    positional = [a for a in call.args if a.keyword is None]
    if len(positional) < 2 or any(a.star for a in positional):
        return None
    inputs = positional[1].value
    if isinstance(inputs, (cst.Tuple, cst.List)):
        if any(isinstance(e, cst.StarredElement) for e in inputs.elements):
            return None
        return [e.value for e in inputs.elements]
    return [inputs]


def parametrize_lists(function: cst.FunctionDef, param: str) -> list[cst.BaseExpression]:
    """float64 entries in `@pytest.mark.parametrize("dtype", [...])` for ``param``."""
    found = []
    for decorator in function.decorators:
        call = decorator.decorator
        if not (isinstance(call, cst.Call) and dotted(call.func).endswith("mark.parametrize")):
            continue
        if len(call.args) < 2 or not isinstance(call.args[0].value, cst.SimpleString):
            continue
        names = [n.strip() for n in str(call.args[0].value.evaluated_value).split(",")]
        if names != [param]:
            continue
        values = call.args[1].value
        if isinstance(values, (cst.List, cst.Tuple)):
            found.extend(e.value for e in values.elements if is_float64(e.value))
    return found


def gradcheck_mutants(model: FileModel) -> Iterator[Mutant]:
    tracer = Tracer(model)
    if "set_default_dtype" in model.text or "set_default_tensor_type" in model.text:
        default_known = False
    else:
        default_known = True
    for call, stack in model.walk.calls:
        function = enclosing_function(stack)
        line = model.line(call)
        elements = input_expressions(model, call, function)
        positional = [a for a in call.args if a.keyword is None]
        inputs_arg = positional[1] if len(positional) >= 2 and not positional[1].star else None
        # GL003 spread / star / posarg
        if inputs_arg is not None and isinstance(inputs_arg.value, cst.Tuple) and \
                len(inputs_arg.value.elements) >= 2 and is_gradcheck_name(call.func) == "gradcheck" \
                and not any(isinstance(e, cst.StarredElement) for e in inputs_arg.value.elements):
            new_args = []
            for arg in call.args:
                if arg is inputs_arg:
                    for element in arg.value.elements:  # type: ignore[union-attr]
                        new_args.append(cst.Arg(element.value, comma=cst.Comma(
                            whitespace_after=cst.SimpleWhitespace(" "))))
                else:
                    new_args.append(arg)
            new_args[-1] = new_args[-1].with_changes(comma=call.args[-1].comma)
            yield Mutant("GL003", "spread", model.path, line,
                         model.replaced(call, call.with_changes(args=new_args)), "spread inputs")
        if inputs_arg is not None and isinstance(inputs_arg.value, cst.Name) and function is not None:
            found = assignments(function, inputs_arg.value.value)
            if len(found) == 1 and found[0][0] is not None and \
                    isinstance(found[0][0].value, (cst.Tuple, cst.List)) and \
                    len(found[0][0].value.elements) >= 2 and model.line(found[0][1]) < line and \
                    is_gradcheck_name(call.func) == "gradcheck":
                new = inputs_arg.with_changes(star="*")
                yield Mutant("GL003", "star", model.path, line,
                             model.replaced(inputs_arg, new), "star the inputs name")
        eps = keyword(call, "eps")
        if inputs_arg is not None and eps is not None and \
                call.args.index(eps) == len(positional) and call.args.index(inputs_arg) == 1:
            args = list(call.args)
            args.remove(eps)
            args.insert(2, eps.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT,
                                            comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))))
            if args[-1] is not call.args[-1] or len(args) == 3:
                args[-1] = args[-1].with_changes(comma=call.args[-1].comma)
            yield Mutant("GL003", "posarg", model.path, line,
                         model.replaced(call, call.with_changes(args=args)), "eps positional")
        if elements is None or function is None:
            continue
        traces = [tracer.trace(e, function, line) for e in elements]
        # GL002: remove every grad source (only when every input is understood)
        if all(t is not None for t in traces) and any(t.grad_sources for t in traces):  # type: ignore[union-attr]
            removals: list[tuple[cst.CSTNode, cst.CSTNode]] = []
            ok = True
            for t in traces:
                for source in t.grad_sources:  # type: ignore[union-attr]
                    if isinstance(source, cst.Arg):
                        removals.append((source.value, cst.Name("False")))
                    elif isinstance(source, cst.Call) and isinstance(source.func, cst.Attribute):
                        removals.append((source, source.func.value))  # x.requires_grad_() -> x
                    elif isinstance(source, cst.Assign):
                        removals.append((source.value, cst.Name("False")))
                    else:
                        ok = False
            if ok and removals:
                yield Mutant("GL002", "nograd", model.path, line,
                             model.replaced_many(removals), "no input requires grad")
        # GL001: the outermost dtype decision of an input that requires grad
        eps_value = eps.value if eps is not None else None
        if eps_value is not None and not (isinstance(eps_value, cst.Float) and float(eps_value.value) < 1e-4):
            continue
        for t in traces:
            if t is None or not t.grad_sources or not t.dtype_decisions:
                continue
            decision = t.dtype_decisions[-1]
            if isinstance(decision, cst.Attribute) and is_float64(decision):
                new = decision.with_changes(attr=cst.Name("float32"))
                yield Mutant("GL001", "dtype64", model.path, line, model.replaced(decision, new),
                             "dtype=float64 -> float32")
            elif isinstance(decision, cst.Call) and isinstance(decision.func, cst.Attribute):
                method = decision.func.attr.value
                if method == "double":
                    new = decision.with_changes(func=decision.func.with_changes(attr=cst.Name("float")))
                    yield Mutant("GL001", "cast64", model.path, line,
                                 model.replaced(decision, new), ".double() -> .float()")
                    if len(t.dtype_decisions) == 1 and t.default_base and default_known and \
                            isinstance(decision.func.value, cst.BaseExpression):
                        yield Mutant("GL001", "dropcast", model.path, line,
                                     model.replaced(decision, decision.func.value), "drop .double()")
                elif method in ("to", "type"):
                    for arg in decision.args:
                        if is_float64(arg.value):
                            new_arg = arg.value.with_changes(attr=cst.Name("float32"))
                            yield Mutant("GL001", "cast64", model.path, line,
                                         model.replaced(arg.value, new_arg), ".to(float64) -> float32")
            elif isinstance(decision, cst.Name) and default_known:
                # dtype=<parameter>: a pytest parametrize list
                for entry in parametrize_lists(function, decision.value):
                    new = entry.with_changes(attr=cst.Name("float32"))  # type: ignore[attr-defined]
                    yield Mutant("GL001", "param64", model.path, model.line(entry),
                                 model.replaced(entry, new), "parametrize float64 -> float32")


# -- Functions ------------------------------------------------------------------------------
def methods(cls: cst.ClassDef) -> dict[str, cst.FunctionDef]:
    found = {}
    body = cls.body
    if isinstance(body, cst.IndentedBlock):
        for stmt in body.body:
            if isinstance(stmt, cst.FunctionDef):
                found[stmt.name.value] = stmt
    return found


def is_function_class(cls: cst.ClassDef) -> bool:
    return any(dotted(b.value).split(".")[-1] in ("Function", "InplaceFunction") for b in cls.bases)


def returns_of(function: cst.FunctionDef) -> list[cst.Return]:
    found = []

    class Finder(cst.CSTVisitor):
        def visit_Return(self, node: cst.Return) -> None:
            found.append(node)

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is function

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

    function.visit(Finder())
    return found


def forward_params(forward: cst.FunctionDef, setup: bool) -> list[cst.Param] | None:
    params = [*forward.params.posonly_params, *forward.params.params]
    if forward.params.star_arg not in (None, cst.MaybeSentinel.DEFAULT) and \
            isinstance(forward.params.star_arg, cst.Param):
        return None
    decorators = [dotted(d.decorator if not isinstance(d.decorator, cst.Call) else d.decorator.func)
                  for d in forward.decorators]
    if "classmethod" in decorators:
        params = params[1:]
    if not setup:
        if not params or params[0].name.value != "ctx":
            return None
        params = params[1:]
    return params


def save_call(method: cst.FunctionDef) -> list[cst.Call]:
    found = []

    class Finder(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Attribute) and node.func.attr.value == "save_for_backward":
                found.append(node)

    method.visit(Finder())
    return found


def function_mutants(model: FileModel) -> Iterator[Mutant]:
    for cls in model.walk.classes:
        if not is_function_class(cls):
            continue
        own = methods(cls)
        forward, backward = own.get("forward"), own.get("backward")
        if forward is None or backward is None:
            continue
        setup = own.get("setup_context")
        params = forward_params(forward, setup is not None)
        backward_params = [*backward.params.posonly_params, *backward.params.params]
        if params is not None and all(p.default is None for p in params) and backward_params:
            total = len(params)
            for ret in returns_of(backward):
                value = ret.value
                if isinstance(value, cst.Tuple) and len(value.elements) == total and \
                        not any(isinstance(e, cst.StarredElement) for e in value.elements):
                    if total >= 2:
                        kept = list(value.elements[:-1])
                        kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
                        yield Mutant("GL004", "dropgrad", model.path, model.line(ret),
                                     model.replaced(value, value.with_changes(elements=kept)),
                                     "drop the last gradient")
                    first = value.elements[0].value
                    if not (isinstance(first, cst.Name) and first.value == "None"):
                        elements = list(value.elements)
                        elements[-1] = elements[-1].with_changes(
                            comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
                        elements.append(cst.Element(first))
                        yield Mutant("GL004", "extragrad", model.path, model.line(ret),
                                     model.replaced(value, value.with_changes(elements=elements)),
                                     "an extra gradient")
                elif total == 1 and value is not None and not isinstance(
                        value, (cst.Tuple, cst.List, cst.Name)) and isinstance(
                        value, (cst.BinaryOperation, cst.Call)):
                    new = cst.Tuple([cst.Element(value, comma=cst.Comma(
                        whitespace_after=cst.SimpleWhitespace(" "))), cst.Element(value)], lpar=[], rpar=[])
                    yield Mutant("GL004", "extragrad", model.path, model.line(ret),
                                 model.replaced(value, new), "an extra gradient")
        # GL005
        saver = setup if setup is not None else forward
        saves = save_call(saver)
        if len(saves) != 1 or any(a.star or a.keyword for a in saves[0].args):
            continue
        saved_count = len(saves[0].args)
        saver_names = {p.name.value for p in (*saver.params.params, *saver.params.posonly_params)}
        for body_stmt in _walk_lines(backward):
            for small in body_stmt.body:
                if isinstance(small, cst.Assign) and len(small.targets) == 1 and \
                        dotted(small.value).endswith(".saved_tensors"):
                    target = small.targets[0].target
                    if isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == saved_count \
                            and not any(isinstance(e, cst.StarredElement) for e in target.elements):
                        names = [e.value.value for e in target.elements if isinstance(e.value, cst.Name)]
                        # dropping the unpack: the names must be forward params (NameError after)
                        if names and all(n in saver_names for n in names) and \
                                body_stmt in _body_statements(backward) and \
                                not set(names) & bound_elsewhere(backward, small):
                            yield Mutant("GL005", "dropunpack", model.path, model.line(body_stmt),
                                         model.replaced(small, cst.Expr(cst.Name("pass")))
                                         if len(body_stmt.body) > 1 else
                                         model.replaced(body_stmt, body_stmt.with_changes(
                                             body=[cst.Pass()])),
                                         "drop the saved_tensors unpack")
                        elements = list(target.elements)
                        elements[-1] = elements[-1].with_changes(
                            comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
                        elements.append(cst.Element(cst.Name("_extra_saved")))
                        yield Mutant("GL005", "unpackcount", model.path, model.line(body_stmt),
                                     model.replaced(target, target.with_changes(elements=elements)),
                                     "unpack one more saved tensor")
        # a use of an unpacked saved tensor replaced by a local of forward
        module_names = set()
        for stmt in model.module.body:
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                module_names.add(stmt.name.value)
            elif isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.Assign):
                        for target in small.targets:
                            module_names.update(n.value for n in _names(target.target))
                    elif isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(small.names, cst.ImportStar):
                        for alias in small.names:
                            module_names.add(dotted(alias.asname.name) if alias.asname else
                                             dotted(alias.name).split(".")[0])
        backward_bound = bound_elsewhere(backward, None)  # type: ignore[arg-type]
        forward_locals = [n for n in sorted(bound_elsewhere(saver, None) - saver_names)  # type: ignore[arg-type]
                          if n not in backward_bound and n not in module_names and n not in dir(builtins)]
        unpacked = [n for line in _walk_lines(backward) for small in line.body
                    if isinstance(small, cst.Assign) and dotted(small.value).endswith(".saved_tensors")
                    for target in small.targets for n in _names(target.target)]
        if forward_locals and unpacked:
            use = _first_load(backward, {n.value for n in unpacked}, set(id(n) for n in unpacked))
            if use is not None:
                yield Mutant("GL005", "localref", model.path, model.line(use),
                             model.replaced(use, cst.Name(forward_locals[0])),
                             f"read forward's local `{forward_locals[0]}`")
        for sub in _subscripts(backward):
            index = sub.slice[0].slice
            if isinstance(index, cst.Index) and isinstance(index.value, cst.Integer) and \
                    int(index.value.value) < saved_count:
                new = sub.with_changes(slice=[sub.slice[0].with_changes(
                    slice=index.with_changes(value=cst.Integer(str(saved_count))))])
                yield Mutant("GL005", "index", model.path, model.line(sub),
                             model.replaced(sub, new), "saved_tensors index out of range")


def bound_elsewhere(function: cst.FunctionDef, skip: cst.CSTNode) -> set[str]:
    """Names bound in ``function`` by anything but ``skip`` (its params included)."""
    names = {p.name.value for p in (*function.params.posonly_params, *function.params.params,
                                      *function.params.kwonly_params)}

    class Finder(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> bool:
            if node is not skip:
                for target in node.targets:
                    names.update(n.value for n in _names(target.target))
            return True

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            names.update(n.value for n in _names(node.target))

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            names.update(n.value for n in _names(node.target))

        def visit_For(self, node: cst.For) -> None:
            names.update(n.value for n in _names(node.target))

        def visit_CompFor(self, node: cst.CompFor) -> None:
            names.update(n.value for n in _names(node.target))

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            names.update(n.value for n in _names(node.target))

        def visit_WithItem(self, node: cst.WithItem) -> None:
            if node.asname is not None:
                names.update(n.value for n in _names(node.asname.name))

        def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
            names.add(dotted(node.asname.name) if node.asname else dotted(node.name).split(".")[0])

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            if node is not function:
                names.add(node.name.value)
                return False
            return True

    function.visit(Finder())
    return names


def _first_load(function: cst.FunctionDef, names: set[str], skip: set[int]) -> cst.Name | None:
    """The first read of one of ``names`` in ``function`` (not a binding, not an attribute)."""
    found: list[cst.Name] = []

    class Finder(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            if node.value in names and id(node) not in skip and not found:
                found.append(node)

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            node.value.visit(self)
            return False

        def visit_AssignTarget(self, node: cst.AssignTarget) -> bool:
            return False

        def visit_Param(self, node: cst.Param) -> bool:
            return False

        def visit_Arg(self, node: cst.Arg) -> bool:
            node.value.visit(self)
            return False

    function.body.visit(Finder())
    return found[0] if found else None


def _walk_lines(function: cst.FunctionDef) -> list[cst.SimpleStatementLine]:
    found = []

    class Finder(cst.CSTVisitor):
        def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
            found.append(node)

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is function

    function.visit(Finder())
    return found


def _subscripts(function: cst.FunctionDef) -> list[cst.Subscript]:
    found = []

    class Finder(cst.CSTVisitor):
        def visit_Subscript(self, node: cst.Subscript) -> None:
            if dotted(node.value).endswith(".saved_tensors") and len(node.slice) == 1:
                found.append(node)

    function.visit(Finder())
    return found


# -- running -------------------------------------------------------------------------------
class Linter:
    def __init__(self) -> None:
        self.cache = LintCache()
        self.resolvers: dict[Path, ConfigResolver] = {}

    def findings(self, path: Path, text: str, root: Path) -> list:
        resolver = self.resolvers.setdefault(root, ConfigResolver(root))
        options = options_for(path, resolver.for_path(path), list(RULES), ())
        report = lint_text(text, path, str(path), options, cache=self.cache)
        if report.internal_error:
            raise RuntimeError(f"{path}: {report.internal_error}")
        return report.findings


def candidate_files(root: Path) -> Iterator[Path]:
    for path in sorted(root.rglob("*.py")):
        if any(part in corpus.SKIPPED_DIRECTORIES for part in path.relative_to(root).parts):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if "gradcheck" in text or "def backward" in text:
            yield path


def mutants_of(path: Path) -> list[Mutant]:
    text = path.read_text(encoding="utf-8")
    try:
        model = FileModel(path, text)
    except Exception:
        return []
    found = []
    if not re.search(r"from torch\.autograd(?:\.gradcheck)? import[^\n]*\bgrad(?:grad)?check|"
                     r"common_utils import[^\n]*\bgrad(?:grad)?check|torch\.autograd\.grad(?:grad)?check|"
                     r"from torch import autograd", text):
        model.walk.calls = []  # bare `gradcheck` names that are not torch's
    for mutant in (*gradcheck_mutants(model), *function_mutants(model)):
        if mutant.text != text and mutant.text.count("\n") == text.count("\n"):
            found.append(mutant)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, default=Path("/tmp/gradlint-corpus"))
    parser.add_argument("--only", default="")
    parser.add_argument("--show-missed", action="store_true", help="print each missed mutant")
    parser.add_argument("--json", type=Path, help="write the per-mutant results here")
    parser.add_argument("--torch", action="store_true",
                        help="also mutate torch's installed sources (its own Functions and tests)")
    parser.add_argument("--torch-path", type=Path, default=corpus.DEFAULT_TORCH,
                        help="torch sources for --torch (default: %(default)s)")
    parser.add_argument("--limit-per-file", type=int, default=12,
                        help="at most this many mutants per file and operator (sampled, seed 0)")
    parser.add_argument("--soundness-split", choices=("tune", "held-out", "all"),
                        help="mutate issue 24's packages (soundness_corpus.py) instead")
    args = parser.parse_args(argv)
    wanted = {n.strip().lower() for n in args.only.split(",") if n.strip()}
    linter = Linter()
    caught: Counter = Counter()
    total: Counter = Counter()
    by_operator: Counter = Counter()
    by_operator_caught: Counter = Counter()
    missed: list[Mutant] = []
    results = []
    rng = random.Random(0)
    roots: list[tuple[str, Path]] = []
    packages = corpus.PACKAGES
    if args.soundness_split:
        import soundness_corpus
        packages = [(n, v, why) for n, v, _split, why in soundness_corpus.selected(args.soundness_split)]
    for name, version, _ in packages:
        if wanted and name.lower() not in wanted:
            continue
        try:
            archive, _kind = corpus.download(name, version, args.cache)
            roots.append((name, corpus.extract(archive, args.cache, name, version)))
        except Exception as error:
            corpus.log(f"skipped {name}=={version}: {error}")
    if args.torch:
        roots.append(("torch", args.torch_path))
    for name, root in roots:
        corpus.log(f"mutating {name} ...")
        for path in candidate_files(root):
            mutants = mutants_of(path)
            if not mutants:
                continue
            groups: dict[str, list[Mutant]] = defaultdict(list)
            for m in mutants:
                groups[m.operator].append(m)
            chosen = []
            for group in groups.values():
                chosen += group if len(group) <= args.limit_per_file else rng.sample(group, args.limit_per_file)
            original = Counter((f.code, f.range.start.line) for f in
                               linter.findings(path, path.read_text(encoding="utf-8"), root))
            for mutant in chosen:
                after = Counter((f.code, f.range.start.line) for f in
                                linter.findings(path, mutant.text, root))
                new = after - original
                hit = any(code == mutant.rule for code, _ in new)
                total[mutant.rule] += 1
                by_operator[(mutant.rule, mutant.operator)] += 1
                if hit:
                    caught[mutant.rule] += 1
                    by_operator_caught[(mutant.rule, mutant.operator)] += 1
                else:
                    missed.append(mutant)
                results.append(dict(package=name, path=str(path), line=mutant.line, rule=mutant.rule,
                                    operator=mutant.operator, caught=hit))
    print_report(caught, total, by_operator, by_operator_caught)
    if args.show_missed:
        for m in missed:
            print(f"MISSED {m.rule} {m.operator} {m.path}:{m.line} ({m.where})")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


def print_report(caught: Counter, total: Counter, by_operator: Counter, by_operator_caught: Counter) -> None:
    print("rule   mutants  caught  recall")
    print("-----  -------  ------  ------")
    for rule in RULES:
        n = total[rule]
        recall = f"{caught[rule] / n:.3f}" if n else "-"
        print(f"{rule}  {n:7d}  {caught[rule]:6d}  {recall:>6}")
    print()
    print("rule   operator     mutants  caught")
    for (rule, operator), n in sorted(by_operator.items()):
        print(f"{rule}  {operator:<11}  {n:7d}  {by_operator_caught[(rule, operator)]:6d}")


if __name__ == "__main__":
    sys.exit(main())
