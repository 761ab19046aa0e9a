"""What "Run gradcheck" can run in a file: autograd Functions, torch.library custom ops,
functions passed to gradcheck, and existing gradcheck calls, with where they are and how
to reach them.

Found statically (libcst), per top-level block, cached like findings. A custom op's
pieces (the op, its backward, setup_context and fake impl) may sit in different blocks:
its target is made from the whole module (gradlint/analysis/custom_ops.py).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, replace
from typing import Callable, Iterable

import libcst as cst

from ..analysis import traverse
from ..analysis.autograd_functions import AutogradFunction
from ..analysis.block import BlockAnalysis
from ..analysis.custom_ops import MENTIONS_TORCH_LIBRARY, CustomOp, custom_ops
from ..analysis.declarations import declared_inputs
from ..analysis.gradcheck_calls import GradcheckCall
from ..analysis.names import BindingKind, dotted_name
from ..analysis.parametrize import parametrize_cases
from ..analysis.scopes import Scope
from ..analysis.test_context import expects_exception
from ..engine.blocks import ParsedBlock
from ..engine.linter import AUTO, LintCache, ModuleView, view_module

@dataclass(frozen=True)
class Target:
    kind: str  # "function_class" | "callable" | "call_site" | "custom_op"
    name: str  # how to show it: "MyReLU", "my_fn", "gradcheck(MyReLU.apply, ...)", "ns::op"
    line: int  # 1-based: the class/def name line, the call's first line, the op's first line
    end_line: int  # the last line of the class/def/call
    column: int  # 0-based code-point column of the name (or of the call)
    qualname: str | None = None  # importable dotted name (function_class/callable)
    importable: bool = True  # defined at module level (or in module-level classes)
    enclosing: str | None = None  # call_site: the function around the call ("Test.test_x")
    variant: str | None = None  # call_site: "gradcheck" | "gradgradcheck"
    refs: tuple[str, ...] = ()  # call_site: names its func refers to (`MyReLU` in MyReLU.apply)
    declared_inputs: str | None = None  # the expression of `# gradlint: inputs=...`
    declaration_line: int | None = None
    backward_line: int | None = None  # function_class: `def backward`
    forward_line: int | None = None
    bases: tuple[str, ...] = ()  # function_class: names of its base classes
    skip: str | None = None  # why "run everything" leaves it out (an abstract base Function)
    parametrize: tuple = ()  # call_site: ((argnames, argvalues source), ...) of the test
    op: str | None = None  # custom_op: "ns::name" (the worker reaches it as torch.ops.ns.name)
    setup_context_line: int | None = None  # custom_op: the registered setup_context's def
    fake_line: int | None = None  # custom_op: the registered fake impl's def
    # custom_op: the (first, last) lines of its registered functions (backward, setup_context,
    # fake impls), which may sit anywhere in the module
    pieces: tuple[tuple[int, int], ...] = ()

    def shifted(self, lines: int) -> "Target":
        def move(value: int | None) -> int | None:
            return None if value is None else value + lines
        return replace(self, line=self.line + lines, end_line=self.end_line + lines,
                       declaration_line=move(self.declaration_line),
                       backward_line=move(self.backward_line), forward_line=move(self.forward_line),
                       setup_context_line=move(self.setup_context_line), fake_line=move(self.fake_line),
                       pieces=tuple((a + lines, b + lines) for a, b in self.pieces))

    @property
    def spans(self) -> tuple[tuple[int, int], ...]:
        """The (first, last) lines of the code that is this target: a Function's class, a
        function's def, a gradcheck call, a custom op's definition and registered functions."""
        return ((self.line, self.end_line), *self.pieces)

    @property
    def key(self) -> tuple:
        """Identity across edits that do not touch it (for caches)."""
        if self.kind == "call_site":
            return (self.kind, self.enclosing, self.name, self.line)
        if self.kind == "custom_op":
            return (self.kind, self.qualname, self.op)
        return (self.kind, self.qualname)


def find_targets(text: str, cache: LintCache | None = None, default_dtype: str | None = AUTO
                 ) -> list[Target]:
    cache = cache or LintCache()
    if "torch" not in text:
        return []
    view = view_module(text, cache, default_dtype)
    targets: list[Target] = []
    store = cache.__dict__.setdefault("targets", {})
    for position, (block, entry) in enumerate(view.good):
        key = (block.text, view.context_key)
        local = store.get(key)
        if local is None:
            local = list(_block_targets(view.analysis(position), entry))
            store[key] = local
            if len(store) > cache.capacity:
                store.pop(next(iter(store)))
        targets.extend(t.shifted(block.start_line - 1) for t in local)
    targets = _mark_abstract(targets, text)
    if MENTIONS_TORCH_LIBRARY.search(text):
        targets = _with_op_targets(targets, view, text, cache)
    return targets


def _mark_abstract(targets: list[Target], text: str) -> list[Target]:
    """Functions that are only subclassed here, never applied, are bases: not run alone."""
    classes = [t for t in targets if t.kind == "function_class"]
    subclasses: dict[str, list[str]] = {}
    for t in classes:
        for base in t.bases:
            subclasses.setdefault(base, []).append(t.name)
    out = []
    for t in targets:
        if t.kind == "function_class" and t.skip is None and t.name in subclasses \
                and not re.search(rf"\b{re.escape(t.name)}\.apply\b", text):
            t = replace(t, skip="abstract base Function (subclassed by %s; never applied itself)"
                        % ", ".join(subclasses[t.name][:3]))
        out.append(t)
    return out


def _with_op_targets(targets: list[Target], view: ModuleView, text: str, cache: LintCache
                     ) -> list[Target]:
    """``targets`` with a target per custom op, each placed after the targets above it. A
    declared function that is a custom op's own function becomes part of the op's target."""
    store = cache.__dict__.setdefault("op_targets", {})
    key = (hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(), view.context_key)
    ops = store.get(key)
    if ops is None:
        ops = [_op_target(op, view) for op in custom_ops(view.context)]
        ops = [t for t in ops if t is not None]
        store[key] = ops
        if len(store) > 256:
            store.pop(next(iter(store)))
    if not ops:
        return targets
    out = list(targets)
    for op in ops:
        declared = next((t for t in out if t.kind == "callable" and op.qualname is not None
                         and t.qualname == op.qualname), None)
        if declared is not None:
            out.remove(declared)
            op = replace(op, declared_inputs=declared.declared_inputs,
                         declaration_line=declared.declaration_line)
        at = next((i for i, t in enumerate(out) if t.line > op.line), len(out))
        out.insert(at, op)
    return out


def _op_target(op: CustomOp, view: ModuleView) -> Target | None:
    """A custom op as a target: where it is, where its registered pieces are, and how the
    worker reaches it (its Python name, else its "ns::name")."""
    statement = op.site.statement
    head = next((d for d in statement.decorators if d.decorator is op.call), None) \
        if isinstance(statement, cst.FunctionDef) else None
    start = view.lines_of(head if head is not None else statement, op.site)
    end = view.lines_of(statement, op.site)
    column = view.column_of(head if head is not None else statement, op.site)
    if start is None or end is None or column is None:
        return None
    qualname = op.qualname if op.style != "define" else None
    name = op.name or qualname
    if name is None:
        return None  # neither a "ns::name" nor a Python name reaches it

    def lines_of(registration) -> tuple[int, int] | None:
        if registration is None or registration.function is None:
            return None
        return view.lines_of(registration.function.node, registration.function.site)

    def line_of(registration) -> int | None:
        lines = lines_of(registration)
        return lines[0] if lines is not None else None

    fakes = op.fakes
    forward = view.lines_of(op.function.node, op.function.site) if op.function is not None else None
    pieces = [lines_of(r) for r in (op.backward, op.setup_context, *fakes, *op.kernels)] + [forward]
    return Target("custom_op", name, start[0], end[1], column, qualname=qualname,
                  importable=_module_level(op.site.scope), op=op.name,
                  backward_line=line_of(op.backward), setup_context_line=line_of(op.setup_context),
                  fake_line=line_of(fakes[-1] if fakes else None),
                  forward_line=forward[0] if forward is not None else None, skip=_op_skip(op),
                  pieces=tuple(sorted({p for p in pieces if p is not None and not start[0] <= p[0] <= end[1]})))


def _module_level(scope: Scope) -> bool:
    """Runs when the module is imported: at module level or in module-level classes."""
    current: Scope | None = scope
    while current is not None and current.kind == "class":
        current = current.parent
    return current is not None and current.kind == "module"


def _op_skip(op: CustomOp) -> str | None:
    """Why "run everything" leaves a custom op out: it cannot run on the CPU from this file."""
    if op.style == "triton_op":
        return "a triton_op: its kernels need Triton and a GPU"
    devices = _device_types(op.call)
    if devices is not None and "cpu" not in devices and not _registers_cpu_kernel(op):
        return "its kernel is for %s only (device_types=); gradlint runs on the CPU" % ", ".join(devices)
    if op.style == "define" and not op.kernels:
        return "defined with torch.library.define, but no kernel is registered in this file (impl)"
    return None


def _registers_cpu_kernel(op: CustomOp) -> bool:
    """Does the op get a CPU kernel from `register_kernel` (or one whose device gradlint
    cannot read)?"""
    for registration in op.registered("kernel"):
        calls = [registration.node]
        if isinstance(registration.node, cst.Call) and isinstance(registration.node.func, cst.Call):
            calls.append(registration.node.func)  # register_kernel(op, "cpu")(fn)
        values: list[cst.BaseExpression] = []
        for call in calls:
            if isinstance(call, cst.Call):
                for arg in call.args:
                    values.extend([e.value for e in arg.value.elements]
                                  if isinstance(arg.value, (cst.Tuple, cst.List)) else [arg.value])
        devices = [v.evaluated_value for v in values if isinstance(v, cst.SimpleString)]
        devices = [str(d).split(":")[0].lower() for d in devices if isinstance(d, str) and "::" not in d]
        if not devices or "cpu" in devices:
            return True
    return False


def _device_types(call: cst.Call) -> list[str] | None:
    """The literal `device_types=` of a custom_op call, None when absent or not literal."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "device_types":
            values = [arg.value] if isinstance(arg.value, cst.SimpleString) else \
                [e.value for e in arg.value.elements] if isinstance(arg.value, (cst.Tuple, cst.List)) else None
            if values is None or not all(isinstance(v, cst.SimpleString) for v in values):
                return None
            found = [v.evaluated_value for v in values]  # type: ignore[union-attr]
            return [str(v).split(":")[0] for v in found if isinstance(v, str)]
    return None


def _block_targets(analysis: BlockAnalysis, entry: ParsedBlock) -> Iterable[Target]:
    for function in analysis.autograd_functions:
        yield _function_target(function, entry, _resolver(analysis, function.site.scope))
    for call in analysis.gradcheck_calls:
        yield _call_target(analysis, call, entry)
    # module-level functions with a declaration are targets of their own
    module_names = _resolver(analysis, analysis.context.scope)
    for stmt in analysis.module.body:
        if isinstance(stmt, cst.FunctionDef):
            declared = _declaration(stmt, entry, module_names)
            if declared is not None:
                rng = entry.position(stmt.name)
                end = entry.position(stmt).end.line
                yield Target("callable", stmt.name.value, rng.start.line, end, rng.start.column,
                             qualname=stmt.name.value, declared_inputs=declared[0],
                             declaration_line=declared[1])


def _resolver(analysis: BlockAnalysis, scope: Scope) -> Callable[[cst.BaseExpression], str | None]:
    return lambda expression: analysis.context.qualified(expression, scope)


def _function_target(function: AutogradFunction, entry: ParsedBlock,
                     qualified: Callable[[cst.BaseExpression], str | None]) -> Target:
    qualname, importable = _qualname(function.node.name.value, function.site.scope)
    rng = entry.position(function.node.name)
    declared = _declaration(function.node, entry, qualified)
    backward = entry.position(function.backward.node.name).start.line \
        if function.backward is not None and "backward" not in function.inherited \
        and "vjp" not in function.inherited else None
    forward = entry.position(function.forward.node.name).start.line \
        if function.forward is not None and "forward" not in function.inherited else None
    bases = tuple((dotted_name(arg.value) or "").split(".")[-1] for arg in function.node.bases
                  if arg.keyword is None)
    return Target("function_class", function.name, rng.start.line, entry.position(function.node).end.line,
                  rng.start.column, qualname=qualname, importable=importable,
                  declared_inputs=declared[0] if declared else None,
                  declaration_line=declared[1] if declared else None,
                  backward_line=backward, forward_line=forward, bases=bases,
                  skip=_unusable(function))


def _unusable(function: AutogradFunction) -> str | None:
    """Why a Function cannot be run alone: no forward or backward of its own to run."""
    for method, name in ((function.forward, "forward"), (function.backward, "backward")):
        if method is None:
            return None if name == "backward" else "no forward: an abstract base Function"
        if _is_stub(method.node):
            return "abstract base Function (%s raises NotImplementedError or is empty)" % name
    return None


def _is_stub(node: cst.FunctionDef) -> bool:
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else []
    statements = [s for s in body if not (isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1
                                          and isinstance(s.body[0], cst.Expr)
                                          and isinstance(s.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))]
    if not statements:
        return True
    if len(statements) != 1 or not isinstance(statements[0], cst.SimpleStatementLine):
        return False
    small = statements[0].body[0]
    if isinstance(small, cst.Pass) or (isinstance(small, cst.Expr) and isinstance(small.value, cst.Ellipsis)):
        return True
    if isinstance(small, cst.Raise) and small.exc is not None:
        exc = small.exc.func if isinstance(small.exc, cst.Call) else small.exc
        return dotted_name(exc) == "NotImplementedError"
    return False


def _call_target(analysis: BlockAnalysis, call: GradcheckCall, entry: ParsedBlock) -> Target:
    rng = entry.position(call.node)
    refs: list[str] = []
    func_text = "…"
    if call.func is not None:
        refs = sorted({n.value for n in _names(call.func.value)})
        func_text = " ".join(analysis.code(call.func.value).split())
        if len(func_text) > 40:
            func_text = func_text[:39] + "…"
    enclosing = _enclosing(call.site.scope)
    test = call.site.scope.node if call.site.scope.kind == "function" else None
    cases = parametrize_cases(test, analysis.code) if isinstance(test, cst.FunctionDef) else ()
    skip = ("inside pytest.raises/assertRaises: the test expects this call to raise (it checks an error, "
            "not gradients)") if expects_exception(call.site) else _marked_skip(call.site.scope)
    return Target("call_site", f"{call.variant}({func_text}, …)", rng.start.line, rng.end.line,
                  rng.start.column, enclosing=enclosing, variant=call.variant, refs=tuple(refs),
                  importable=enclosing is None or "<locals>" not in enclosing, parametrize=cases, skip=skip)


_SKIP_MARKS = frozenset({"pytest.mark.skip", "mark.skip", "unittest.skip", "skip"})


def _marked_skip(scope: Scope | None) -> str | None:
    """Why pytest would not run the test around a call: ``@pytest.mark.skip(...)`` or
    ``@unittest.skip(...)`` on the test or its class (``skipif`` depends on the run: not here)."""
    while scope is not None and scope.kind != "module":
        node = scope.node
        for decorator in getattr(node, "decorators", ()):
            expr = decorator.decorator
            call = expr if isinstance(expr, cst.Call) else None
            name = dotted_name(call.func if call is not None else expr) or ""
            if name in _SKIP_MARKS:
                reason = ""
                if call is not None and call.args and isinstance(call.args[0].value, cst.SimpleString):
                    reason = f": {call.args[0].value.evaluated_value}"
                return f"the test is marked skip{reason} (pytest does not run it; name it to run it anyway)"
        scope = scope.parent
    return None


def _names(node: cst.CSTNode) -> list[cst.Name]:
    found: list[cst.Name] = []

    class Visitor(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            found.append(name)

        def visit_Attribute(self, attribute: cst.Attribute) -> bool:
            traverse.visit(attribute.value, self)
            found.append(attribute.attr)  # `ops.Square.apply` refers to `Square` too
            return False

    traverse.visit(node, Visitor())
    return found


def _qualname(name: str, scope: Scope) -> tuple[str, bool]:
    """The class's dotted name (``factory.<locals>.Fn`` inside a function) and whether the worker
    can reach it: defined at module level or in module-level classes, or made by a **factory**
    (``factory_returning``)."""
    parts = [name]
    importable = True
    current: Scope | None = scope
    while current is not None and current.kind != "module":
        node = current.node
        if current.kind == "class" and isinstance(node, cst.ClassDef):
            parts.append(node.name.value)
        elif isinstance(node, cst.FunctionDef):
            parts.append(f"{node.name.value}.<locals>")
            importable = False
        current = current.parent
    if not importable and factory_returning(name, scope):
        importable = True
    return ".".join(reversed(parts)), importable


def factory_returning(name: str, scope: Scope) -> bool:
    """Is the class ``name`` defined directly in a module-level function that returns it (``return
    Fn`` or ``return Fn.apply``: qpth's ``QPFunction(eps=...)`` returns ``QPFunctionFn.apply``)?
    The worker then calls that function (with its defaults) to reach the class. Never a test
    function (calling it would run the test)."""
    node = scope.node
    parent = scope.parent
    if scope.kind != "function" or not isinstance(node, cst.FunctionDef) or parent is None \
            or parent.kind != "module" or node.name.value.startswith("test"):
        return False

    class Returns(cst.CSTVisitor):
        found = False

        def visit_FunctionDef(self, inner: cst.FunctionDef) -> bool:
            return inner is node  # returns of nested functions are theirs

        def visit_ClassDef(self, inner: cst.ClassDef) -> bool:
            return False

        def visit_Return(self, ret: cst.Return) -> None:
            value = ret.value
            if isinstance(value, cst.Attribute) and value.attr.value == "apply":
                value = value.value
            if isinstance(value, cst.Name) and value.value == name:
                self.found = True

    visitor = Returns()
    node.visit(visitor)
    return visitor.found


def _enclosing(scope: Scope) -> str | None:
    if scope.kind == "module":
        return None
    parts = []
    current: Scope | None = scope
    while current is not None and current.kind != "module":
        node = current.node
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            parts.append(node.name.value)
        if current.kind == "function" and current.parent is not None and current.parent.kind == "function":
            parts.append("<locals>")
        current = current.parent
    return ".".join(reversed(parts))


def _declaration(node: cst.FunctionDef | cst.ClassDef, entry: ParsedBlock,
                 qualified: Callable[[cst.BaseExpression], str | None] | None = None
                 ) -> tuple[str, int] | None:
    """The inputs declared for a class or def (`@gradlint.inputs(...)` or
    `# gradlint: inputs=...`), and the declaration's line."""
    assert entry.module is not None
    found = declared_inputs(node, entry.module, qualified)
    if found is None:
        return None
    return found[0], entry.position(found[1]).start.line


def symbol_target(text: str, symbol: str, cache: LintCache | None = None) -> Target | None:
    """The target named ``symbol``: a Function class, a custom op (by its Python name or
    its "ns::name"), or any module-level function."""
    cache = cache or LintCache()
    for target in find_targets(text, cache):
        if target.kind in ("function_class", "custom_op") and symbol in (target.qualname, target.name):
            return target
    view = view_module(text, cache)
    bindings = view.context.scope.table.bindings.get(symbol, [])
    if len(bindings) != 1 or bindings[0].kind is not BindingKind.DEF:
        return None
    node = bindings[0].node
    for block, entry in view.good:
        assert entry.module is not None
        if any(stmt is node for stmt in entry.module.body):
            assert isinstance(node, cst.FunctionDef)
            rng = entry.position(node.name)
            declared = _declaration(node, entry,
                                    lambda expression: view.context.qualified(expression, view.context.scope))
            offset = block.start_line - 1
            return Target("callable", symbol, rng.start.line + offset,
                          entry.position(node).end.line + offset, rng.start.column,
                          qualname=symbol, declared_inputs=declared[0] if declared else None,
                          declaration_line=declared[1] + offset if declared else None)
    return None
