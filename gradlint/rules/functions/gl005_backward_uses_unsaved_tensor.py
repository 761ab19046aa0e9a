from __future__ import annotations

import builtins
from typing import Iterator, Sequence

import libcst as cst

from ...analysis import memos
from ...analysis.autograd_functions import AutogradFunction, Method, class_base_names
from ...analysis.block import BlockAnalysis
from ...analysis.names import compound_bodies, target_names
from ...analysis.method_body import returns
from ...analysis.scopes import ModuleContext, Site, find_site
from ...analysis.traverse import visit
from ...findings import Applicability, Severity
from ..base import DEFINES_BACKWARD, FixProposal, Invalid, Replacement, Report, Rule, Valid

_BUILTINS = frozenset(dir(builtins))
# builtins whose arguments may legitimately be other builtins (`map(float, xs)`)
_HIGHER_ORDER = frozenset({"map", "filter", "sorted", "max", "min", "isinstance", "issubclass",
                           "getattr", "hasattr", "callable", "functools"})


class BackwardUsesUnsavedTensor(Rule):
    """## What it does
    Checks how `backward` of a custom `torch.autograd.Function` gets at values from
    `forward`:

    - a name that is a parameter or local variable of `forward` (or of `setup_context`)
      and is not defined in `backward`: `forward` has returned long before, so the name
      does not exist there (or, for `input`, it is Python's builtin function);
    - `a, b, c = ctx.saved_tensors` when `forward` saved a different number of tensors;
    - `x = ctx.saved_tensors` (a forgotten comma) when one tensor was saved: `x` is then a
      1-tuple, not a tensor;
    - `ctx.saved_tensors[i]` past the tensors saved (`IndexError: tuple index out of range`).

    The tensors saved are counted from one `save_for_backward(...)` call; a spread
    `save_for_backward(*tensors)` counts when `tensors` is a list or tuple display bound
    once in the same method and used nowhere else (nothing can add to it).

    ## Why is this bad?
    Each of these fails only when backward runs, far from the cause: a `NameError: name
    'y' is not defined` (which `gradcheck(raise_exception=False)` does not catch), a
    `ValueError: not enough values to unpack (expected 3, got 2)`, or, for the 1-tuple,
    `TypeError: only integer tensors of a single element can be converted to an index`
    from `grad * x`. Tensors that backward needs must be saved with
    `ctx.save_for_backward(...)` in `forward` (or `setup_context`) and unpacked from
    `ctx.saved_tensors`; other values can be stored as attributes of `ctx`.

    ## Example
    ```python
    class Exp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            return y

        @staticmethod
        def backward(ctx, grad):
            return grad * y
    ```

    Use instead:
    ```python
    class Exp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            y, = ctx.saved_tensors
            return grad * y
    ```

    ## Fix safety
    Only the forgotten comma has a fix (`x = ctx.saved_tensors` becomes
    `x, = ctx.saved_tensors`); it is safe, since the code only works with a tensor there.
    The other cases need the author to decide what to save.

    ## References
    - [Extending torch.autograd](https://docs.pytorch.org/docs/stable/notes/extending.html)
    - [pytorch/pytorch#13540](https://github.com/pytorch/pytorch/issues/13540)
    """

    code = "GL005"
    name = "backward-uses-unsaved-tensor"
    severity = Severity.ERROR
    summary = "backward reads a forward local, or unpacks ctx.saved_tensors wrongly"
    requires = DEFINES_BACKWARD

    VALID = [
        Valid("""
            import torch
            class Exp(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    y = x.exp()
                    ctx.save_for_backward(y)
                    return y

                @staticmethod
                def backward(ctx, grad):
                    y, = ctx.saved_tensors
                    return grad * y
            """),
        Valid("""
            import torch
            scale = torch.tensor(2.0)
            class Scale(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    return x * scale

                @staticmethod
                def backward(ctx, grad):
                    return grad * scale
            """, why="a module-level name is visible in backward"),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            class Exp(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    y = x.exp()
                    return y

                @staticmethod
                def backward(ctx, grad):
                    return grad * y
            """,
            message="backward reads `y`, a local variable of forward that backward cannot see "
                    "(NameError); save it with ctx.save_for_backward(y) and unpack ctx.saved_tensors",
            range=(10, 23, 10, 24),
        ),
        Invalid(
            """
            import torch
            class Mul(torch.autograd.Function):
                @staticmethod
                def forward(ctx, a, b):
                    ctx.save_for_backward(a, b)
                    return a * b

                @staticmethod
                def backward(ctx, grad):
                    a, b, c = ctx.saved_tensors
                    return grad * b, grad * a
            """,
            message="backward unpacks 3 saved tensors but forward saved 2 (`a`, `b`); "
                    "ValueError when backward runs",
            range=(10, 9, 10, 16),
        ),
    ]

    def check(self, block: BlockAnalysis) -> Iterator[Report]:
        for function in block.autograd_functions:
            backward = function.backward
            if backward is None or "backward" in function.inherited or "vjp" in function.inherited:
                continue
            yield from _unpacking(block, function, backward)
            yield from _indexing(block, function, backward)
            yield from _foreign_names(block, function, backward)


# -- names that only exist in forward --------------------------------------------------
class _Uses(cst.CSTVisitor):
    """Names read in a function body, with how each occurrence is used."""

    def __init__(self) -> None:
        self.uses: list[tuple[cst.Name, str]] = []  # (node, "call" | "value" | "argument")
        self.comprehension_names: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.uses.append((node, "value"))

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        visit(node.value, self)
        return False

    def visit_Call(self, node: cst.Call) -> bool:
        if isinstance(node.func, cst.Name):
            self.uses.append((node.func, "call"))
            higher = node.func.value in _HIGHER_ORDER
        else:
            visit(node.func, self)
            higher = False
        for arg in node.args:
            if arg.keyword is not None or higher:
                if isinstance(arg.value, cst.Name):
                    self.uses.append((arg.value, "argument"))
                else:
                    visit(arg.value, self)
            else:
                visit(arg.value, self)
        return False

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self.comprehension_names.update(target_names(node.target))

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Param(self, node: cst.Param) -> bool:
        return False

    def visit_ImportAlias(self, node: cst.ImportAlias) -> bool:
        return False

    def visit_Global(self, node: cst.Global) -> bool:
        return False

    def visit_Nonlocal(self, node: cst.Nonlocal) -> bool:
        return False


def _foreign_names(block: BlockAnalysis, function: AutogradFunction,
                   backward: Method) -> Iterator[Report]:
    sources = [m for m in (function.forward, function.setup_context) if m is not None]
    if not sources:
        return
    visitor = _Uses()
    for stmt in backward.scope.statements:
        visit(stmt, visitor)
    outside = function.scope.parent  # the scope the class is defined in
    reported: set[str] = set()
    for node, usage in visitor.uses:
        name = node.value
        if name in reported or name in backward.scope.table or name in visitor.comprehension_names:
            continue
        owner = next((m for m in sources if name in m.scope.table and name != m.context_name), None)
        if owner is None:
            continue
        if any(isinstance(b.node, (cst.Global, cst.Nonlocal))
               for b in owner.scope.table.bindings[name]):
            continue  # `global x` in forward: x lives outside, backward can read it
        if outside is not None and outside.binding_scope(name) is not None:
            continue  # a global or a closure variable: visible in backward too
        builtin = name in _BUILTINS
        if builtin and usage != "value" and not (usage == "argument" and name == "input"):
            continue  # `max(a, b)`, `key=len`: the builtin itself, on purpose (but nobody
            # hands Python's input() to a function: `f(x=input)` means forward's tensor)
        reported.add(name)
        yield _foreign_report(backward, owner, node, builtin)


def _foreign_report(backward: Method, owner: Method, node: cst.Name, builtin: bool) -> Report:
    name = node.value
    method = "forward" if owner is owner.owner.forward else "setup_context"
    kind = "parameter" if any(p.name.value == name for p in owner.params) else "local variable"
    stored = _stored_as(owner, name)
    saved = _saved_names(owner)
    effect = "here it is Python's builtin " + name + "()" if builtin else "NameError"
    if stored is not None and not builtin:
        advice = f"use `{backward.context_name or 'ctx'}.{stored}`, where {method} stored it"
    elif saved is not None and name in saved:
        advice = "unpack it from ctx.saved_tensors, where it was saved"
    else:
        advice = f"save it with ctx.save_for_backward({name}) and unpack ctx.saved_tensors"
    message = (f"backward reads `{name}`, a {kind} of {method} that backward cannot see "
               f"({effect}); {advice}")
    site = _site_of_name(backward, node)
    return Report(node, message, site)


def _stored_as(method: Method, name: str) -> str | None:
    """``ctx.attr = name`` in ``method``: the attribute name."""
    ctx = method.context_name
    for line in _lines(method.scope.statements):
        for small in line.body:
            if isinstance(small, cst.Assign) and isinstance(small.value, cst.Name) and \
                    small.value.value == name:
                for target in small.targets:
                    tgt = target.target
                    if isinstance(tgt, cst.Attribute) and isinstance(tgt.value, cst.Name) and \
                            tgt.value.value == ctx:
                        return tgt.attr.value
    return None


# -- ctx.saved_tensors ----------------------------------------------------------------
def _save_calls(method: Method, ctx: str | None = None) -> list[cst.Call]:
    """``ctx.save_for_backward(...)`` calls in ``method``'s body.

    The rule asks again for each unpacking and indexing of ``ctx.saved_tensors``: the
    calls are remembered for the lint, by method and ctx name (the answer reads nothing
    else: the method's own statements, which never change)."""
    ctx = ctx or method.context_name
    key = (id(method), ctx)
    known = memos.recall(_SAVE_CALLS, key, method)
    if known is memos.MISSING:
        known = tuple(_find_save_calls(method, ctx))
        memos.remember(_SAVE_CALLS, key, method, known)
    return list(known)  # type: ignore[arg-type]


_SAVE_CALLS: dict = memos.memo(memos.NEAR_ENTRIES)  # (id(method), ctx name) -> (method, its save calls)


def _find_save_calls(method: Method, ctx: str | None) -> list[cst.Call]:
    finder = _SaveCalls(ctx)
    for stmt in method.scope.statements:
        visit(stmt, finder)
    return finder.calls


class _SaveCalls(cst.CSTVisitor):
    """`ctx.save_for_backward(...)` calls, outside nested functions. (The visitors of this
    rule are module-level classes: one defined inside a function is a new class on every
    call, about 25 us to make and a reference cycle for the collector.)"""

    def __init__(self, ctx: str | None) -> None:
        self.ctx = ctx
        self.calls: list[cst.Call] = []

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "save_for_backward" and \
                isinstance(func.value, cst.Name) and func.value.value == self.ctx:
            self.calls.append(node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False


def _saved_names(method: Method) -> list[str] | None:
    calls = _save_calls(method)
    if len(calls) != 1:
        return None
    return [a.value.value if isinstance(a.value, cst.Name) else "" for a in calls[0].args]


def _saved(function: AutogradFunction, context: ModuleContext
           ) -> tuple[Method, cst.Call | None] | None:
    """The one `ctx.save_for_backward(...)` call, in setup_context or forward (None: the
    method certainly saves nothing)."""
    method = function.setup_context if function.style == "setup_context" else function.forward
    ctx = None
    if method is not None and [p.name.value for p in method.params[:2]] == ["cls", "ctx"]:
        ctx = "ctx"  # a base class's `forward(cls, ctx, ...)` that subclasses' forward call
    elif method is None or function.style is None or not method.params:
        return None
    if method is None or \
            ("setup_context" if function.style == "setup_context" else "forward") in function.inherited:
        return None
    calls = _save_calls(method, ctx)
    if not calls and ctx is None and _saves_nothing(function, method, context):
        return method, None  # ctx.saved_tensors is ()
    if len(calls) != 1:
        return None
    call = _with_known_lists_spread(calls[0], method)
    if any(a.star or a.keyword is not None for a in call.args):
        return None
    return method, call


def _with_known_lists_spread(call: cst.Call, method: Method) -> cst.Call:
    """``ctx.save_for_backward(*tensors)`` with ``tensors = [a, b]`` bound once and used
    nowhere else (so nothing can change it): the call as ``save_for_backward(a, b)``."""
    args: list[cst.Arg] = []
    for arg in call.args:
        elements = _known_list(arg, method) if arg.star == "*" else None
        if elements is None:
            args.append(arg)
        else:
            args.extend(cst.Arg(e.value) for e in elements)
    return call if len(args) == len(call.args) and all(a is b for a, b in zip(args, call.args)) \
        else call.with_changes(args=args)


def _known_list(arg: cst.Arg, method: Method) -> Sequence[cst.BaseElement] | None:
    if not isinstance(arg.value, cst.Name):
        return None
    name = arg.value.value
    bindings = method.scope.table.bindings.get(name, [])
    if len(bindings) != 1 or not isinstance(bindings[0].value, (cst.List, cst.Tuple)):
        return None
    elements = bindings[0].value.elements
    if any(isinstance(e, cst.StarredElement) for e in elements):
        return None
    uses = []

    class Uses(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            if node.value == name:
                uses.append(node)

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            visit(node.value, self)
            return False

    for stmt in method.scope.statements:
        visit(stmt, Uses())
    return elements if len(uses) == 2 else None  # the assignment and the spread


def _saves_nothing(function: AutogradFunction, method: Method, context: ModuleContext) -> bool:
    """``method`` certainly saves no tensor, and it is the one that runs: a forward that
    returns a value, is not abstract, in a class no class of the module derives from."""
    if any(isinstance(d.decorator, (cst.Name, cst.Attribute)) and
           (d.decorator.value if isinstance(d.decorator, cst.Name) else d.decorator.attr.value)
           == "abstractmethod" for d in method.node.decorators):
        return False
    if not any(isinstance(r.value, cst.BaseExpression) for r, _ in returns(method)):
        return False
    return _ctx_only_attributes(method) and function.name not in class_base_names(context)


def _ctx_only_attributes(method: Method) -> bool:
    """``ctx`` appears in the method only as ``ctx.attr`` (never handed to other code,
    never in a nested function, never ``ctx.save_for_backward``): nothing can save."""
    ctx = method.context_name
    if ctx is None or ctx in ("cls", "self"):
        return False  # not a ctx for sure
    known = memos.recall(_CTX_ONLY_ATTRIBUTES, id(method), method)
    if known is memos.MISSING:  # (asked for the unpacking and again for the indexing)
        finder = _CtxUses(ctx)
        for stmt in method.scope.statements:
            visit(stmt, finder)
        known = all(id(name) in finder.safe for name in finder.names)
        memos.remember(_CTX_ONLY_ATTRIBUTES, id(method), method, known)
    return known  # type: ignore[return-value]


_CTX_ONLY_ATTRIBUTES: dict = memos.memo(memos.NEAR_ENTRIES)  # id(method) -> (method, the answer)


class _CtxUses(cst.CSTVisitor):
    """The uses of ``ctx``: every name (a nested function counts as one), and the ids of
    those that are ``ctx.attr`` other than ``ctx.save_for_backward``."""

    def __init__(self, ctx: str) -> None:
        self.ctx = ctx
        self.safe: set[int] = set()
        self.names: list[cst.Name] = []

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if isinstance(node.value, cst.Name) and node.value.value == self.ctx and \
                node.attr.value != "save_for_backward":
            self.safe.add(id(node.value))

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == self.ctx:
            self.names.append(node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.names.append(cst.Name(self.ctx))  # a nested function: what it does is not followed
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return self.visit_FunctionDef(node)  # type: ignore[arg-type]


def _unpacking(block: BlockAnalysis, function: AutogradFunction, backward: Method
               ) -> Iterator[Report]:
    saved = _saved(function, block.context)
    if saved is None:
        return
    method, call = saved
    args = call.args if call is not None else ()
    count = len(args)
    where = "forward" if method is function.forward else "setup_context"
    ctx = backward.context_name
    for line in _lines(backward.scope.statements):
        for small in line.body:
            if not (isinstance(small, cst.Assign) and len(small.targets) == 1):
                continue
            value = small.value
            if not (isinstance(value, cst.Attribute) and value.attr.value == "saved_tensors" and
                    isinstance(value.value, cst.Name) and value.value.value == ctx):
                continue
            target = small.targets[0].target
            site = find_site(backward.scope.statements, backward.scope, line)
            if site is None:
                continue
            if isinstance(target, (cst.Tuple, cst.List)):
                if any(isinstance(e, cst.StarredElement) for e in target.elements):
                    continue
                unpacked = len(target.elements)
                if unpacked != count:
                    listed = _listed(block, args)
                    message = (f"backward unpacks {unpacked} saved tensor{'s' if unpacked != 1 else ''} "
                               f"but {where} saved {count or 'nothing'}{f' ({listed})' if listed else ''}; "
                               f"ValueError when backward runs")
                    yield Report(target, message, site)
            elif isinstance(target, cst.Name) and count == 1 and \
                    _used_as_tensor(backward, target.value):
                fix = FixProposal(
                    f"Unpack the saved tensor: `{target.value}, = ...`", Applicability.SAFE,
                    (Replacement(target, f"{target.value},", site),))
                message = (f"`{target.value} = {ctx}.saved_tensors` makes `{target.value}` a 1-tuple, "
                           f"not the saved tensor; write `{target.value}, = {ctx}.saved_tensors`")
                yield Report(target, message, site, fix)


def _listed(block: BlockAnalysis, args: Sequence[cst.Arg]) -> str:
    """The saved values as the message lists them (written out only for a report: the
    code of a node is generated anew each time)."""
    names = [block.code(a.value) for a in args]
    return ", ".join(f"`{n}`" for n in names) if all(len(n) < 20 for n in names) else ""


def _indexing(block: BlockAnalysis, function: AutogradFunction, backward: Method
              ) -> Iterator[Report]:
    """``ctx.saved_tensors[i]`` (or ``saved[i]`` after ``saved = ctx.saved_tensors``) past
    the tensors saved."""
    saved = _saved(function, block.context)
    if saved is None:
        return
    method, call = saved
    args = call.args if call is not None else ()
    count = len(args)
    where = "forward" if method is function.forward else "setup_context"
    ctx = backward.context_name
    aliases = {name for name, bindings in backward.scope.table.bindings.items()
               if len(bindings) == 1 and bindings[0].value is not None
               and _is_saved_tensors(bindings[0].value, ctx)}
    finder = _SavedSubscripts(ctx, aliases)
    for stmt in backward.scope.statements:
        visit(stmt, finder)
    for node, index in finder.found:
        if -count <= index < count:
            continue
        listed = _listed(block, args)
        message = (f"backward reads saved tensor [{index}] but {where} saved {count or 'nothing'}"
                   f"{f' ({listed})' if listed else ''}; IndexError when backward runs")
        yield Report(node, message, _site_of_name(backward, node))  # type: ignore[arg-type]


def _is_saved_tensors(node: cst.BaseExpression, ctx: str | None) -> bool:
    return isinstance(node, cst.Attribute) and node.attr.value == "saved_tensors" and \
        isinstance(node.value, cst.Name) and node.value.value == ctx


class _SavedSubscripts(cst.CSTVisitor):
    def __init__(self, ctx: str | None, aliases: set[str]):
        self.ctx = ctx
        self.aliases = aliases
        self.found: list[tuple[cst.Subscript, int]] = []

    def visit_Subscript(self, node: cst.Subscript) -> None:
        base = node.value
        if not (_is_saved_tensors(base, self.ctx) or
                (isinstance(base, cst.Name) and base.value in self.aliases)):
            return
        if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
            return
        value = node.slice[0].slice.value
        negative = isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus)
        if negative:
            value = value.expression  # type: ignore[union-attr]
        if isinstance(value, cst.Integer):
            index = int(value.value, 0)
            self.found.append((node, -index if negative else index))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False


class _TupleUse(cst.CSTVisitor):
    """How a name is used: as a tensor (arithmetic, attributes) or as a tuple."""

    def __init__(self, name: str):
        self.name = name
        self.as_tensor = False
        self.as_tuple = False

    def _is(self, node: cst.CSTNode) -> bool:
        return isinstance(node, cst.Name) and node.value == self.name

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if self._is(node.left) or self._is(node.right):
            self.as_tensor = True

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        if self._is(node.expression):
            self.as_tensor = True

    def visit_Comparison(self, node: cst.Comparison) -> None:
        operands = [node.left, *(target.comparator for target in node.comparisons)]
        tensor_ops = all(not isinstance(t.operator, (cst.In, cst.NotIn, cst.Is, cst.IsNot))
                         for t in node.comparisons)
        if tensor_ops and any(self._is(operand) for operand in operands):
            self.as_tensor = True

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if self._is(node.value) and node.attr.value not in ("count", "index"):
            self.as_tensor = True

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if self._is(node.value):
            self.as_tuple = True

    def visit_Call(self, node: cst.Call) -> None:
        if any(self._is(arg.value) for arg in node.args):
            self.as_tuple = True  # handed to a function: it may expect the tuple

    def visit_StarredElement(self, node: cst.StarredElement) -> None:
        if self._is(node.value):
            self.as_tuple = True

    def visit_For(self, node: cst.For) -> None:
        if self._is(node.iter):
            self.as_tuple = True

    def visit_CompFor(self, node: cst.CompFor) -> None:
        if self._is(node.iter):
            self.as_tuple = True

    def visit_Assign(self, node: cst.Assign) -> None:
        if self._is(node.value):
            self.as_tuple = True  # aliased or unpacked later


def _used_as_tensor(method: Method, name: str) -> bool:
    visitor = _TupleUse(name)
    for stmt in method.scope.statements:
        visit(stmt, visitor)
    return visitor.as_tensor and not visitor.as_tuple


# -- helpers -----------------------------------------------------------------------------
def _lines(statements):
    for stmt in statements:
        if isinstance(stmt, cst.SimpleStatementLine):
            yield stmt
        elif not isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            for body, _ in compound_bodies(stmt):
                yield from _lines(body)


def _site_of_name(method: Method, node: cst.Name) -> Site:
    for stmt in method.scope.statements:
        finder = _Contains(node)
        visit(stmt, finder)
        if finder.found:
            return _deepest_site(method, stmt, node)
    return Site(method.scope, ())


def _deepest_site(method: Method, top: cst.BaseStatement, node: cst.Name) -> Site:
    for line in _lines([top]):
        finder = _Contains(node)
        visit(line, finder)
        if finder.found:
            site = find_site(method.scope.statements, method.scope, line)
            if site is not None:
                return site
    site = find_site(method.scope.statements, method.scope, top)
    assert site is not None
    return site


class _Contains(cst.CSTVisitor):
    skip_trivia = True  # (traverse.visit: the targets looked for are never layout nodes)

    def __init__(self, target: cst.CSTNode):
        self.target = target
        self.found = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if node is self.target:
            self.found = True
        return not self.found
