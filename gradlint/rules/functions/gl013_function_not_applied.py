from __future__ import annotations

import re
from typing import Iterator

import libcst as cst

from ...analysis import memos
from ...analysis.autograd_functions import AutogradFunction
from ...analysis.block import BlockAnalysis
from ...analysis.gradcheck_calls import StatementExpressions
from ...analysis.held_values import constructor_attribute
from ...analysis.names import body_statements, dotted_name
from ...analysis.scopes import Scope, Site, walk_statements
from ...analysis.test_context import expects_exception
from ...findings import Applicability, Severity
from ..base import FixProposal, Invalid, Replacement, Report, Rule, Valid

# a class name (CamelCase, as Functions are named) called, or its forward called directly.
# (`[A-Z](?<!\w[A-Z])` is `\b[A-Z]`, but a pattern that starts with a character set lets
# `re` skip to the capitals: 2.5x faster on torch's sources, the same matches.)
_CLASS_NAME = r"[A-Z](?<!\w[A-Z])\w*"
CALLS_FUNCTION_WRONGLY = re.compile(
    rf"{_CLASS_NAME}\(\s*\)\s*(?:\(|\.\s*apply\b)|{_CLASS_NAME}\.forward\s*\("
    rf"|\bself\.\w+\s*=\s*{_CLASS_NAME}\(\s*\)")  # an instance kept on the object
# methods of a Function (or of a subclass) that may delegate to another Function's forward
_FUNCTION_METHODS = frozenset({"forward", "backward", "setup_context", "jvp", "vjp", "vmap"})
_NO_GRAD = frozenset({"no_grad", "inference_mode"})


class FunctionNotApplied(Rule):
    """## What it does
    Checks for custom `torch.autograd.Function` classes used without `apply`:
    `MyFn()(x)` (an error), `MyFn().apply(x)` and `MyFn.forward(ctx, x)` called
    directly (warnings), and an instance kept on an object (`self.fn = MyFn()` in
    `__init__`, the one binding of `fn` in the class) and called later (`self.fn(x)`, an
    error). Calls inside another Function's methods (delegation to a base), under
    `torch.no_grad()`, and code that also calls `MyFn.backward` (a test of the two
    methods by hand) are left alone.

    ## Why is this bad?
    Measured with torch 2.13:

    - `MyFn()(x)` emits `DeprecationWarning: <class 'MyFn'> should not be instantiated.
      ...` and then raises `RuntimeError: Legacy autograd function with non-static
      forward method is deprecated. Please use new-style autograd function with static
      forward method.` (even when forward is static);
    - `MyFn().apply(x)` works but emits that DeprecationWarning ("Instantiating an
      autograd function will raise an error in a future version of PyTorch");
    - `MyFn.forward(ctx, x)` is a plain Python call: the output's `grad_fn` is that of
      the last torch op in forward (`MulBackward0`), so the custom `backward` is
      silently bypassed (a Function with a deliberately different backward gave
      `[2, 4, 6]` instead of its own `[3, 6, 9]`); with `ctx=None` it raises
      `AttributeError: 'NoneType' object has no attribute 'save_for_backward'`.

    ## Example
    ```python
    y = MyReLU()(x)
    z = MyReLU.forward(None, x)
    ```

    Use instead:
    ```python
    y = MyReLU.apply(x)
    z = MyReLU.apply(x)
    ```

    ## Fix safety
    `MyFn()(...)` and `MyFn().apply(...)` become `MyFn.apply(...)`: safe (the first
    raised, the second gives the same result without the warning). `MyFn.forward(ctx,
    ...)` becomes `MyFn.apply(...)` without the ctx argument: unsafe, since the custom
    backward now runs and whatever forward stored on the given ctx is not there.
    """

    code = "GL013"
    name = "function-not-applied"
    severity = Severity.WARNING
    summary = "MyFn()(x), MyFn().apply(x) or MyFn.forward(...) instead of MyFn.apply(x)"
    requires = CALLS_FUNCTION_WRONGLY
    requires_in_code = True  # (what it needs is code: a docstring or comment naming it is not)

    VALID = [
        Valid("""
            import torch
            class Double(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    return x * 2

                @staticmethod
                def backward(ctx, g):
                    return g * 2

            y = Double.apply(x)
            """),
        Valid("""
            import torch
            class Base(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    return x * 2

                @staticmethod
                def backward(ctx, g):
                    return g * 2

            class Logged(Base):
                @staticmethod
                def forward(ctx, x):
                    print("forward")
                    return Base.forward(ctx, x)
            """, why="delegation inside another Function's forward"),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            class Double(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    return x * 2

                @staticmethod
                def backward(ctx, g):
                    return g * 2

            y = Double()(x)
            """,
            message="`Double()(...)` instantiates the Function: torch raises RuntimeError "
                    "(\"Legacy autograd function with non-static forward method\"); call "
                    "`Double.apply(...)`",
            range=(11, 5, 11, 13),
            severity="error",
            fixed="""
            import torch
            class Double(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    return x * 2

                @staticmethod
                def backward(ctx, g):
                    return g * 2

            y = Double.apply(x)
            """,
            applicability="safe",
        ),
        Invalid(
            """
            import torch
            class Double(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    return x * 2

                @staticmethod
                def backward(ctx, g):
                    return g * 2

            def run(x):
                return Double().apply(x)
            """,
            message="`Double().apply(...)` instantiates the Function (DeprecationWarning; an error "
                    "in a future torch); call `Double.apply(...)`",
            fixed="""
            import torch
            class Double(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    return x * 2

                @staticmethod
                def backward(ctx, g):
                    return g * 2

            def run(x):
                return Double.apply(x)
            """,
            applicability="safe",
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        context = block.context
        index = block.function_index
        for stmt, site in walk_statements(context.statements, context.scope, indexes=block.indexes):
            if expects_exception(site):
                continue  # a test of torch's error: the mistake is on purpose
            calls = StatementExpressions.of(stmt, cst.Call)
            for call in calls:
                assert isinstance(call, cst.Call)
                func = call.func
                # MyFn()(x)
                if isinstance(func, cst.Call) and not func.args:
                    function = index.function_class(func.func, site.scope)
                    if function is not None and function.style is not None:
                        yield self._instantiated(block, function, func, call, site)
                    continue
                if not isinstance(func, cst.Attribute):
                    continue
                # self.fn(x), with `self.fn = MyFn()` in __init__
                held = _held_instance(block, func, site)
                if held is not None:
                    function, inner = held
                    message = (f"`{block.code(func)}` holds a `{function.name}()` instance (set in "
                               f"__init__): calling it raises RuntimeError (\"Legacy autograd function "
                               f"with non-static forward method\"); call `{function.name}.apply(...)`")
                    yield Report(func, message, site, severity=Severity.ERROR)
                    continue
                # MyFn().apply(x)
                if func.attr.value == "apply" and isinstance(func.value, cst.Call) and \
                        not func.value.args:
                    function = index.function_class(func.value.func, site.scope)
                    if function is not None:
                        fix = FixProposal(f"Call `{function.name}.apply`", Applicability.SAFE,
                                          (Replacement(func.value, function.name, site),))
                        message = (f"`{function.name}().apply(...)` instantiates the Function "
                                   f"(DeprecationWarning; an error in a future torch); call "
                                   f"`{function.name}.apply(...)`")
                        yield Report(func, message, site, fix)
                    continue
                # MyFn.forward(ctx, x)
                if func.attr.value == "forward":
                    function = index.function_class(func.value, site.scope)
                    if function is None or function.style is None or \
                            _delegating(block, site.scope) or _under_no_grad(site) or \
                            _calls_backward_too(calls_in_scope(block, site.scope), function.name):
                        continue
                    yield self._forward_called(block, function, func, call, site)

    def _instantiated(self, block: BlockAnalysis, function: AutogradFunction, inner: cst.Call,
                      call: cst.Call, site: Site) -> Report:
        fix = FixProposal(f"Call `{function.name}.apply`", Applicability.SAFE,
                          (Replacement(inner, f"{function.name}.apply", site),))
        message = (f"`{function.name}()(...)` instantiates the Function: torch raises RuntimeError "
                   f"(\"Legacy autograd function with non-static forward method\"); call "
                   f"`{function.name}.apply(...)`")
        return Report(inner, message, site, fix, severity=Severity.ERROR)

    def _forward_called(self, block: BlockAnalysis, function: AutogradFunction,
                        func: cst.Attribute, call: cst.Call, site: Site) -> Report:
        message = (f"`{function.name}.forward(...)` runs forward as a plain function: the custom "
                   f"backward is bypassed (autograd differentiates forward's own ops); call "
                   f"`{function.name}.apply(...)`")
        args = list(call.args)
        fix = None
        if function.style == "ctx" and args and args[0].keyword is None and not args[0].star:
            rest = args[1:]
            fix = _apply_fix(block, function, call, rest, site)
        elif function.style == "setup_context":
            fix = _apply_fix(block, function, call, args, site)
        return Report(func, message, site, fix)


def _apply_fix(block: BlockAnalysis, function: AutogradFunction, call: cst.Call,
               args: list[cst.Arg], site: Site) -> FixProposal | None:
    if any(a.keyword is not None for a in args):
        return None
    if args:
        args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    new = call.with_changes(func=cst.Attribute(cst.Name(function.name), cst.Name("apply")), args=args)
    text = block.code(new)
    if "\n" in text:
        return None
    return FixProposal(f"Call `{function.name}.apply`", Applicability.UNSAFE,
                       (Replacement(call, text, site),))


def _delegating(block: BlockAnalysis, scope: Scope) -> bool:
    """Inside a method of a custom Function (delegating to another one's forward)."""
    from ...analysis.autograd_functions import FunctionResolver

    current: Scope | None = scope
    while current is not None and current.parent is not None:
        node, parent = current.node, current.parent
        if isinstance(node, cst.FunctionDef) and node.name.value in _FUNCTION_METHODS and \
                parent.kind == "class" and isinstance(parent.node, cst.ClassDef) and \
                parent.parent is not None and \
                FunctionResolver(block.context).lineage(parent.node, parent.parent).is_function \
                is not False:
            return True
        current = parent
    return False


def _under_no_grad(site: Site) -> bool:
    for frame in site.frames:
        owner = frame.owner
        if isinstance(owner, cst.With):
            for item in owner.items:
                expr = item.item
                name = dotted_name(expr.func if isinstance(expr, cst.Call) else expr) or ""
                if name.split(".")[-1] in _NO_GRAD:
                    return True
    return False


def calls_in_scope(block: BlockAnalysis, scope: Scope) -> list[cst.Call]:
    found: list[cst.Call] = []
    for stmt, site in walk_statements(scope.statements, scope):
        if site.scope is scope:
            found.extend(StatementExpressions.of(stmt, cst.Call))  # type: ignore[arg-type]
    return found


def _calls_backward_too(calls: list[cst.Call], name: str) -> bool:
    for call in calls:
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "backward" and \
                isinstance(func.value, cst.Name) and func.value.value == name:
            return True
    return False


_INIT_CALLS = memos.memo(memos.NEAR_ENTRIES)


def _instantiated_in_init(class_node: cst.ClassDef) -> frozenset[str]:
    """The attributes a top-level ``self.attr = Something()`` of the class's ``__init__``
    sets (a call with no arguments): the only ones ``_held_instance`` can find. Asked once per
    class, not once per ``self.x(...)`` call of its methods (a big class made that quadratic)."""
    known = memos.recall(_INIT_CALLS, id(class_node), class_node)
    if known is memos.MISSING:
        names = set()
        for stmt in body_statements(class_node.body):
            if isinstance(stmt, cst.FunctionDef) and stmt.name.value == "__init__":
                for line in body_statements(stmt.body):
                    if isinstance(line, cst.SimpleStatementLine):
                        for small in line.body:
                            if isinstance(small, cst.Assign) and isinstance(small.value, cst.Call) and \
                                    not small.value.args:
                                names.update(t.target.attr.value for t in small.targets
                                             if isinstance(t.target, cst.Attribute))
        known = frozenset(names)
        memos.remember(_INIT_CALLS, id(class_node), class_node, known)
    return known  # type: ignore[return-value]


def _held_instance(block: BlockAnalysis, func: cst.Attribute, site: Site
                   ) -> tuple[AutogradFunction, cst.Call] | None:
    """``self.attr`` in a method, where the class's ``__init__`` set ``self.attr = MyFn()``
    (and nothing else binds ``attr``): the Function and its instantiation."""
    if not isinstance(func.value, cst.Name):
        return None
    method = site.scope
    while method is not None and method.kind != "function":
        method = method.parent
    if method is None or not isinstance(method.node, cst.FunctionDef):
        return None
    params = [p.name.value for p in method.node.params.params]
    owner = method.parent
    if not params or params[0] != func.value.value or owner is None or owner.kind != "class" or \
            not isinstance(owner.node, cst.ClassDef):
        return None
    if func.attr.value not in _instantiated_in_init(owner.node):
        return None  # (the cheap question first: constructor_attribute walks the class)
    value = constructor_attribute(owner.node, func.attr.value)
    if not isinstance(value, cst.Call) or value.args:
        return None
    function = block.function_index.function_class(value.func, owner)
    if function is None or function.style is None:
        return None
    return function, value
