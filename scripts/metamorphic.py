#!/usr/bin/env python3
"""Metamorphic rewrites: meaning-preserving changes to code, as libcst transforms.

Each rewrite takes a module's source and returns its variants (none when it does not
apply). A variant runs exactly as the original does, so gradlint must not find anything
new in it (soundness); on buggy code it should keep finding the bug (recall, reported per
rewrite). ``tests/test_metamorphic.py`` applies every rewrite to every rule example;
``main`` applies them to real code (see ``--help``).

The rewrites, each the way real test suites write the same thing:

``extract_helper``   an input built by a module-level helper: ``x = _make_x()``
``kwargs_literal``   keywords of torch calls passed as ``**{"dtype": ...}``
``kwargs_variable``  ... or through a dict variable: ``kw = dict(dtype=...)``; ``f(**kw)``
``setup_method``     a test function's inputs built in a ``unittest.TestCase.setUp``
``fixture``          ... or by a pytest fixture that returns them
``dataclass_case``   ... or held as the fields of a dataclass instance
``dict_loop``        ... or taken from a dict of cases in a ``for`` loop
``decorated_helper`` ... or returned by a helper wrapped in a decorator (functools.wraps)
``rename``           a local name renamed everywhere
``reorder``          two adjacent independent assignments swapped
``annotate``         assignments annotated (``x: torch.Tensor = ...``)

A test function qualifies for the "inputs" rewrites when it takes no parameters and
starts with simple ``name = expression`` assignments; the moved assignments are the
longest such prefix whose expressions use only earlier moved names and module globals.
"""

from __future__ import annotations

import argparse
import builtins
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Callable, Iterator, Sequence

import libcst as cst
from libcst.metadata import MetadataWrapper, ScopeProvider

FACTORY_PREFIXES = ("torch.",)
BUILTIN_NAMES = frozenset(dir(builtins))


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


def _dotted(node: cst.BaseExpression) -> str:
    parts = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        return ".".join(reversed(parts))
    return ""


def _names_read(node: cst.CSTNode) -> set[str]:
    found: set[str] = set()

    class Names(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> bool:
            node.value.visit(self)
            return False

        def visit_Arg(self, node: cst.Arg) -> bool:
            node.value.visit(self)
            return False

        def visit_Name(self, node: cst.Name) -> None:
            found.add(node.value)

    node.visit(Names())
    return found


def _parse(source: str) -> cst.Module | None:
    try:
        return cst.parse_module(source)
    except cst.ParserSyntaxError:
        return None


def _compiles(source: str) -> bool:
    try:
        compile(source, "<variant>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


# -- keyword arguments through ** ------------------------------------------------------------
class _KeywordsToStar(cst.CSTTransformer):
    def __init__(self, variable: bool):
        self.variable = variable
        self.count = 0
        self.hoisted: list[list[cst.SimpleStatementLine]] = [[]]

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if not _dotted(updated.func).startswith(FACTORY_PREFIXES):
            return updated
        keywords = [a for a in updated.args if a.keyword is not None]
        if not keywords or any(a.star for a in updated.args):
            return updated
        self.count += 1
        rest = [a for a in updated.args if a.keyword is None]
        elements = [cst.DictElement(cst.SimpleString(repr(a.keyword.value)), a.value) for a in keywords]
        mapping: cst.BaseExpression = cst.Dict(elements)
        if self.variable:
            return updated  # handled per statement (see _KeywordsThroughVariable)
        rest = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in rest]
        return updated.with_changes(args=[*rest, cst.Arg(mapping, star="**")])


def kwargs_literal(source: str) -> list[str]:
    module = _parse(source)
    if module is None:
        return []
    transformer = _KeywordsToStar(variable=False)
    new = module.visit(transformer)
    return [new.code] if transformer.count else []


class _KeywordsThroughVariable(cst.CSTTransformer):
    """``torch.f(a, k=v)`` in a simple statement becomes ``_kw1 = dict(k=v)`` before it
    and ``torch.f(a, **_kw1)``."""

    def __init__(self) -> None:
        self.count = 0
        self.pending: list[cst.BaseSmallStatement] = []
        self.depth = 0
        self.inside = False

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self.pending = []
        self.inside = True

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        self.depth += 1
        return True

    def leave_Lambda(self, original: cst.Lambda, updated: cst.Lambda) -> cst.Lambda:
        self.depth -= 1
        return updated

    def visit_CompFor(self, node: cst.CompFor) -> bool:
        self.depth += 1
        return True

    def leave_CompFor(self, original: cst.CompFor, updated: cst.CompFor) -> cst.CompFor:
        self.depth -= 1
        return updated

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if self.depth or not self.inside or not _dotted(updated.func).startswith(FACTORY_PREFIXES):
            return updated  # (only calls of simple statements: the assignment goes before)
        keywords = [a for a in updated.args if a.keyword is not None]
        if not keywords or any(a.star for a in updated.args):
            return updated
        self.count += 1
        name = f"_kw{self.count}"
        value = cst.Call(cst.Name("dict"), [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in keywords])
        self.pending.append(cst.Assign([cst.AssignTarget(cst.Name(name))], value))
        rest = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in updated.args if a.keyword is None]
        return updated.with_changes(args=[*rest, cst.Arg(cst.Name(name), star="**")])

    def leave_SimpleStatementLine(self, original, updated):
        self.inside = False
        if not self.pending:
            return updated
        lines = [cst.SimpleStatementLine([assign]) for assign in self.pending]
        self.pending = []
        return cst.FlattenSentinel([*lines, updated.with_changes(leading_lines=())]) \
            if not original.leading_lines else cst.FlattenSentinel(
                [lines[0].with_changes(leading_lines=original.leading_lines), *lines[1:],
                 updated.with_changes(leading_lines=())])


def kwargs_variable(source: str) -> list[str]:
    module = _parse(source)
    if module is None:
        return []
    transformer = _KeywordsThroughVariable()
    new = module.visit(transformer)
    return [new.code] if transformer.count else []


# -- the inputs of a test function ----------------------------------------------------------
def _module_globals(module: cst.Module) -> set[str]:
    found = set()
    for stmt in module.body:
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            found.add(stmt.name.value)
        elif isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(small.names, cst.ImportStar):
                    for alias in small.names:
                        target = alias.asname.name if alias.asname else alias.name
                        found.add(_code(target).split(".")[0])
                elif isinstance(small, cst.Assign):
                    for target in small.targets:
                        found |= _names_read(target.target)
    return found


def _leading_inputs(function: cst.FunctionDef, known: set[str]
                    ) -> tuple[list[tuple[str, cst.BaseExpression]], list[cst.BaseStatement]] | None:
    """The moved assignments (name, value) and the rest of the body."""
    params = function.params
    if params.params or params.posonly_params or params.kwonly_params or params.star_arg != cst.MaybeSentinel.DEFAULT \
            and params.star_arg is not None and not isinstance(params.star_arg, cst.MaybeSentinel) \
            or params.star_kwarg is not None or function.decorators or function.asynchronous:
        return None
    if not isinstance(function.body, cst.IndentedBlock):
        return None
    body = list(function.body.body)
    moved: list[tuple[str, cst.BaseExpression]] = []
    index = 0
    assigned_later = set()
    while index < len(body):
        stmt = body[index]
        if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
                and isinstance(stmt.body[0], cst.Assign) and len(stmt.body[0].targets) == 1
                and isinstance(stmt.body[0].targets[0].target, cst.Name)):
            break
        name = stmt.body[0].targets[0].target.value
        value = stmt.body[0].value
        reads = _names_read(value)
        allowed = known | {n for n, _ in moved} | BUILTIN_NAMES
        if not reads <= allowed or name in {n for n, _ in moved} or any(
                isinstance(n, (cst.NamedExpr, cst.Yield, cst.Await)) for n in _walk(value)):
            break
        moved.append((name, value))
        index += 1
    rest = body[index:]
    if not moved or not rest:
        return None
    for stmt in rest:  # a moved name assigned again later: keep it simple, skip
        assigned_later |= _assigned_names(stmt)
    if assigned_later & {n for n, _ in moved}:
        return None
    return moved, rest


def _walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    yield node
    for child in node.children:
        yield from _walk(child)


def _assigned_names(node: cst.CSTNode) -> set[str]:
    found = set()
    for child in _walk(node):
        if isinstance(child, cst.AssignTarget):
            found |= _names_read(child.target)
        elif isinstance(child, (cst.AugAssign, cst.AnnAssign)):
            found |= _names_read(child.target)
        elif isinstance(child, (cst.For, cst.CompFor)):
            found |= _names_read(child.target)
        elif isinstance(child, cst.AsName):
            found |= _names_read(child.name)
        elif isinstance(child, (cst.Global, cst.Nonlocal)):
            found |= {n.name.value for n in child.names}
        elif isinstance(child, cst.NamedExpr):
            found |= _names_read(child.target)
    return found


class _Replace(cst.CSTTransformer):
    """Name reads of ``names`` become ``make(name)`` (not attributes, not keywords)."""

    def __init__(self, names: set[str], make: Callable[[str], cst.BaseExpression]):
        self.names = names
        self.make = make

    def leave_Attribute(self, original, updated):
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original, updated):
        return updated.with_changes(keyword=original.keyword)

    def leave_Name(self, original, updated):
        if original.value in self.names:
            return self.make(original.value)
        return updated


def _replaced(nodes: Sequence[cst.CSTNode], names: set[str], make) -> list:
    return [node.visit(_Replace(names, make)) for node in nodes]


def _stmt(text: str) -> cst.BaseStatement:
    return cst.parse_statement(text)


def _after_prologue(body: Sequence[cst.BaseStatement]) -> int:
    """Where added imports go: after a docstring and ``from __future__`` imports."""
    at = 0
    for index, stmt in enumerate(body):
        if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and (
                isinstance(stmt.body[0], cst.ImportFrom) and _code(stmt.body[0].module or cst.Name("x")) == "__future__"
                or index == 0 and isinstance(stmt.body[0], cst.Expr)
                and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))):
            at = index + 1
    return at


def _as_test(module: cst.Module) -> cst.Module | None:
    """A module whose script part (the statements after the last import, class or def)
    starts with assignments: that part moved into ``def test_script():``."""
    body = list(module.body)
    start = 0
    for index, stmt in enumerate(body):
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) or (
                isinstance(stmt, cst.SimpleStatementLine)
                and any(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body)):
            start = index + 1
    script = body[start:]
    if not script or not all(isinstance(s, cst.SimpleStatementLine) for s in script) or any(
            isinstance(n, (cst.Global, cst.Nonlocal, cst.Return, cst.Yield, cst.Await)) for s in script for n in _walk(s)):
        return None
    later = set()
    for stmt in script:
        later |= _assigned_names(stmt)
    used_before = set()
    for stmt in body[:start]:  # a function or class that reads a script name: leave it
        used_before |= _names_read(stmt)
    if later & used_before:
        return None
    function = cst.FunctionDef(cst.Name("test_script"), cst.Parameters(), _indented(script),
                               leading_lines=[cst.EmptyLine()])
    return module.with_changes(body=[*body[:start], function])


def _rewrite_tests(source: str, rewrite: Callable[[cst.FunctionDef, list, list], list[cst.BaseStatement]],
                   imports: Sequence[str]) -> list[str]:
    """Rewrite each qualifying top-level test function; one variant with all of them."""
    module = _parse(source)
    if module is None:
        return []
    if not any(isinstance(s, cst.FunctionDef) and s.name.value.startswith("test") for s in module.body):
        wrapped = _as_test(module)
        if wrapped is None:
            return []
        module = wrapped
    known = _module_globals(module)
    body: list[cst.BaseStatement] = []
    changed = 0
    for stmt in module.body:
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value.startswith("test"):
            split = _leading_inputs(stmt, known)
            if split is not None:
                moved, rest = split
                body.extend(rewrite(stmt, moved, rest))
                changed += 1
                continue
        body.append(stmt)
    if not changed:
        return []
    header = [_stmt(line) for line in imports]
    at = _after_prologue(body)
    variant = module.with_changes(body=[*body[:at], *header, *body[at:]]).code
    return [variant] if _compiles(variant) else []


def _indented(statements: Sequence[cst.BaseStatement]) -> cst.IndentedBlock:
    return cst.IndentedBlock(body=list(statements))


def setup_method(source: str) -> list[str]:
    def rewrite(function, moved, rest):
        names = {n for n, _ in moved}
        self_name = lambda n: cst.Attribute(cst.Name("self"), cst.Name(n))  # noqa: E731
        setup_body = [cst.SimpleStatementLine([cst.Assign(
            [cst.AssignTarget(cst.Attribute(cst.Name("self"), cst.Name(name)))],
            _replaced([value], names, self_name)[0])]) for name, value in moved]
        self_param = cst.Parameters([cst.Param(cst.Name("self"))])
        setup = cst.FunctionDef(cst.Name("setUp"), self_param, _indented(setup_body))
        test = function.with_changes(params=self_param,
                                     body=_indented(_replaced(rest, names, self_name)),
                                     leading_lines=())
        title = "Test" + "".join(p.capitalize() for p in function.name.value.split("_")[1:]) + "Case"
        return [cst.ClassDef(cst.Name(title), _indented([setup, test]),
                             bases=[cst.Arg(cst.parse_expression("unittest.TestCase"))],
                             leading_lines=function.leading_lines)]
    return _rewrite_tests(source, rewrite, ["import unittest"])


def fixture(source: str) -> list[str]:
    def rewrite(function, moved, rest):
        fname = f"{function.name.value}_inputs"
        names = [n for n, _ in moved]
        make = [cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(n))], v)]) for n, v in moved]
        result = cst.parse_expression("(" + ", ".join(names) + ",)")
        fix = cst.FunctionDef(cst.Name(fname), cst.Parameters(),
                              _indented([*make, cst.SimpleStatementLine([cst.Return(result)])]),
                              decorators=[cst.Decorator(cst.parse_expression("pytest.fixture"))],
                              leading_lines=function.leading_lines)
        unpack = _stmt(", ".join(names) + f", = {fname}")
        test = function.with_changes(params=cst.Parameters([cst.Param(cst.Name(fname))]),
                                     body=_indented([unpack, *rest]), leading_lines=())
        return [fix, test]
    return _rewrite_tests(source, rewrite, ["import pytest"])


def dataclass_case(source: str) -> list[str]:
    def rewrite(function, moved, rest):
        cname = "_Case_" + function.name.value
        fields = [_stmt(f"{n}: object") for n, _ in moved]
        klass = cst.ClassDef(cst.Name(cname), _indented(fields),
                             decorators=[cst.Decorator(cst.parse_expression("dataclasses.dataclass"))],
                             leading_lines=function.leading_lines)
        names = {n for n, _ in moved}
        # values may read earlier fields: build them as locals first, then the case
        locals_ = [cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name("_" + n))],
                   _replaced([v], names, lambda m: cst.Name("_" + m))[0])]) for n, v in moved]
        build = _stmt(f"case = {cname}(" + ", ".join(f"{n}=_{n}" for n, _ in moved) + ")")
        body = _replaced(rest, names, lambda m: cst.Attribute(cst.Name("case"), cst.Name(m)))
        if "case" in set().union(*(_names_read(s) for s in rest)) | set().union(*(_assigned_names(s) for s in rest)):
            return [function]
        return [klass, function.with_changes(body=_indented([*locals_, build, *body]), leading_lines=())]
    return _rewrite_tests(source, rewrite, ["import dataclasses"])


def dict_loop(source: str) -> list[str]:
    def rewrite(function, moved, rest):
        names = {n for n, _ in moved}
        if any(_names_read(v) & names for _, v in moved):
            return [function]  # a value reads another moved one: not one dict literal
        if any(isinstance(n, (cst.Break, cst.Continue)) for s in rest for n in _walk(s)):
            return [function]
        entries = ", ".join(f"{n!r}: {_code(v)}" for n, v in moved)
        loop_head = f"for _case_name, _case in {{'default': {{{entries}}}}}.items():\n    pass\n"
        loop = cst.parse_statement(loop_head)
        unpack = [_stmt(f"{n} = _case[{n!r}]") for n, _ in moved]
        loop = loop.with_changes(body=_indented([*unpack, *rest]))
        return [function.with_changes(body=_indented([loop]))]
    return _rewrite_tests(source, rewrite, [])


def decorated_helper(source: str) -> list[str]:
    def rewrite(function, moved, rest):
        hname = f"_make_{function.name.value}"
        names = [n for n, _ in moved]
        make = [cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(n))], v)]) for n, v in moved]
        result = cst.parse_expression("(" + ", ".join(names) + ",)")
        helper = cst.FunctionDef(cst.Name(hname), cst.Parameters(),
                                 _indented([*make, cst.SimpleStatementLine([cst.Return(result)])]),
                                 decorators=[cst.Decorator(cst.Name("_passthrough"))],
                                 leading_lines=function.leading_lines)
        unpack = _stmt(", ".join(names) + f", = {hname}()")
        return [helper, function.with_changes(body=_indented([unpack, *rest]), leading_lines=())]
    variants = _rewrite_tests(source, rewrite, [
        "import functools",
        "def _passthrough(fn):\n    @functools.wraps(fn)\n    def inner(*args, **kwargs):\n"
        "        return fn(*args, **kwargs)\n    return inner\n"])
    return variants


def extract_helper(source: str) -> list[str]:
    def rewrite(function, moved, rest):
        out: list[cst.BaseStatement] = []
        body = []
        names = {n for n, _ in moved}
        for name, value in moved:
            if _names_read(value) & names:
                body.append(cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(name))], value)]))
                continue
            helper = f"_make_{function.name.value}_{name}"
            out.append(cst.FunctionDef(cst.Name(helper), cst.Parameters(),
                                       _indented([cst.SimpleStatementLine([cst.Return(value)])])))
            body.append(_stmt(f"{name} = {helper}()"))
        if out:
            out[0] = out[0].with_changes(leading_lines=function.leading_lines)
        return [*out, function.with_changes(body=_indented([*body, *rest]),
                                            leading_lines=() if out else function.leading_lines)]
    return _rewrite_tests(source, rewrite, [])


# -- rename, reorder, annotate ------------------------------------------------------------------
def rename(source: str) -> list[str]:
    """Each name assigned inside a function (not a parameter, a builtin, a keyword used
    anywhere, an attribute or an import) renamed everywhere in the module."""
    module = _parse(source)
    if module is None:
        return []
    keywords, params, imported, attributes, defined = set(), set(), set(), set(), set()
    for node in _walk(module):
        if isinstance(node, cst.Arg) and node.keyword is not None:
            keywords.add(node.keyword.value)
        elif isinstance(node, cst.Param):
            params.add(node.name.value)
        elif isinstance(node, cst.ImportAlias):
            imported.add(_code(node.asname.name if node.asname else node.name).split(".")[0])
        elif isinstance(node, cst.Attribute):
            attributes.add(node.attr.value)
        elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            defined.add(node.name.value)
        elif isinstance(node, (cst.Global, cst.Nonlocal)):
            keywords |= {n.name.value for n in node.names}  # leave them alone
    local = set()
    for node in _walk(module):
        if isinstance(node, cst.FunctionDef) and isinstance(node.body, cst.IndentedBlock):
            for stmt in node.body.body:
                local |= _assigned_names(stmt)
    strings = set()
    for node in _walk(module):  # names that strings may refer to (locals(), getattr, fixtures)
        if isinstance(node, cst.SimpleString):
            strings.add(node.evaluated_value if isinstance(node.evaluated_value, str) else "")
    chosen = sorted(n for n in local - keywords - params - imported - attributes - defined - BUILTIN_NAMES - strings
                    if not n.startswith("__") and n != "_")
    if not chosen:
        return []
    mapping = {n: f"{n}_renamed" for n in chosen}

    class Rename(cst.CSTTransformer):
        def leave_Attribute(self, original, updated):
            return updated.with_changes(attr=original.attr)

        def leave_Arg(self, original, updated):
            return updated.with_changes(keyword=original.keyword)

        def leave_Name(self, original, updated):
            if original.value in mapping:
                return updated.with_changes(value=mapping[original.value])
            return updated

    variant = module.visit(Rename()).code
    return [variant] if _compiles(variant) else []


def reorder(source: str) -> list[str]:
    """The first pair of adjacent independent simple assignments in each block swapped."""
    module = _parse(source)
    if module is None:
        return []
    state = {"count": 0}

    def independent(a: cst.BaseStatement, b: cst.BaseStatement) -> bool:
        definitions = (cst.FunctionDef, cst.ClassDef)
        if isinstance(a, definitions) and isinstance(b, definitions):
            # two definitions: neither may mention the other (decorators, bases and class
            # bodies run when the definition does)
            return a.name.value != b.name.value and b.name.value not in _names_read(a) \
                and a.name.value not in _names_read(b)

        def simple(s):
            return isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 and \
                isinstance(s.body[0], cst.Assign) and all(isinstance(t.target, cst.Name) for t in s.body[0].targets)
        if not (simple(a) and simple(b)):
            return False
        a_targets, b_targets = _assigned_names(a), _assigned_names(b)
        a_reads, b_reads = _names_read(a.body[0].value), _names_read(b.body[0].value)
        if a_targets & (b_reads | b_targets) or b_targets & a_reads:
            return False
        # only calls whose order does not matter beyond random draws: torch and builtins
        for value in (a.body[0].value, b.body[0].value):
            for node in _walk(value):
                if isinstance(node, cst.Call) and not (_dotted(node.func).startswith("torch.") or
                                                       _dotted(node.func) in BUILTIN_NAMES):
                    return False
        return True

    class Swap(cst.CSTTransformer):
        def leave_IndentedBlock(self, original, updated):
            return updated.with_changes(body=self._swapped(list(updated.body)))

        def leave_Module(self, original, updated):
            return updated.with_changes(body=self._swapped(list(updated.body)))

        def _swapped(self, body):
            for i in range(len(body) - 1):
                if independent(body[i], body[i + 1]):
                    first, second = body[i], body[i + 1]
                    body[i] = second.with_changes(leading_lines=first.leading_lines)
                    body[i + 1] = first.with_changes(leading_lines=second.leading_lines)
                    state["count"] += 1
                    break
            return body

    variant = module.visit(Swap()).code
    return [variant] if state["count"] and _compiles(variant) else []


def annotate(source: str) -> list[str]:
    """``x = torch.f(...)`` becomes ``x: torch.Tensor = torch.f(...)`` (``object`` for other
    values) in function bodies; module-level assignments are left alone."""
    module = _parse(source)
    if module is None:
        return []
    state = {"count": 0, "depth": 0}

    class Annotate(cst.CSTTransformer):
        def visit_FunctionDef(self, node):
            state["depth"] += 1

        def leave_FunctionDef(self, original, updated):
            state["depth"] -= 1
            return updated

        def visit_ClassDef(self, node):
            state["depth"] += 100  # class bodies: annotations make dataclass fields etc.

        def leave_ClassDef(self, original, updated):
            state["depth"] -= 100
            return updated

        def leave_Assign(self, original, updated):
            if not (0 < state["depth"] < 100) or len(updated.targets) != 1 or \
                    not isinstance(updated.targets[0].target, cst.Name):
                return updated
            value = updated.value
            is_tensor = isinstance(value, cst.Call) and _dotted(value.func).startswith("torch.")
            annotation = cst.Annotation(cst.parse_expression("torch.Tensor" if is_tensor else "object"))
            state["count"] += 1
            return cst.AnnAssign(updated.targets[0].target, annotation, value)

    variant = module.visit(Annotate()).code
    return [variant] if state["count"] and _compiles(variant) else []


REWRITES: dict[str, Callable[[str], list[str]]] = {
    "extract_helper": extract_helper,
    "kwargs_literal": kwargs_literal,
    "kwargs_variable": kwargs_variable,
    "setup_method": setup_method,
    "fixture": fixture,
    "dataclass_case": dataclass_case,
    "dict_loop": dict_loop,
    "decorated_helper": decorated_helper,
    "rename": rename,
    "reorder": reorder,
    "annotate": annotate,
}


def variants(source: str) -> Iterator[tuple[str, str]]:
    """(rewrite name, variant) for every rewrite that applies to ``source``."""
    for name, rewrite in REWRITES.items():
        for variant in rewrite(source):
            if variant != source:
                yield name, variant


# -- real code --------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="metamorphic rewrites on real code: new "
                                     "findings (must be 0) and kept findings per rewrite")
    parser.add_argument("--cache-dir", type=Path, required=True)
    parser.add_argument("--corpus", choices=("soundness-tune", "soundness-held-out", "old"), default="soundness-tune")
    parser.add_argument("--only", default="")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--mutants", action="store_true",
                        help="also rewrite the mutation harness's mutants: recall per rewrite")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import mutation_harness  # noqa: E402
    import real_code_accuracy as corpus  # noqa: E402
    import soundness_corpus  # noqa: E402

    if args.corpus == "old":
        wanted = {n.strip().lower() for n in args.only.split(",") if n.strip()}
        roots = []
        for name, version, _ in corpus.PACKAGES:
            if wanted and name.lower() not in wanted:
                continue
            archive, _kind = corpus.download(name, version, args.cache_dir)
            roots.append((name, corpus.extract(archive, args.cache_dir, name, version)))
    else:
        split = args.corpus.removeprefix("soundness-")
        roots = [(n, r) for n, _v, _k, r in soundness_corpus.fetch(
            args.cache_dir, soundness_corpus.selected(split, args.only))]
    linter = mutation_harness.Linter()

    def codes(path: Path, text: str, root: Path) -> Counter:
        return Counter(f.code for f in all_findings(linter, path, text, root))

    new_findings: list[str] = []
    applied: Counter = Counter()
    kept: Counter = Counter()
    had: Counter = Counter()
    mutants_total: Counter = Counter()
    mutants_caught: Counter = Counter()
    for package, root in roots:
        corpus.log(f"rewriting {package} ...")
        for path in mutation_harness.candidate_files(root):
            text = path.read_text(encoding="utf-8")
            original = codes(path, text, root)
            for name, variant in variants(text):
                applied[name] += 1
                after = codes(path, variant, root)
                extra = after - original
                if extra:
                    new_findings.append(f"{name} {package} {path.relative_to(root)}: {dict(extra)}")
                if original:
                    had[name] += 1
                    kept[name] += not (original - after)
            if args.mutants:
                for mutant in mutation_harness.mutants_of(path)[:6]:
                    for name, variant in variants(mutant.text):
                        base = dict(variants(text)).get(name)
                        if base is None:
                            continue
                        mutants_total[name] += 1
                        if codes(path, variant, root)[mutant.rule] > codes(path, base, root)[mutant.rule]:
                            mutants_caught[name] += 1
    print(f"{'rewrite':<18}{'files':>7}{'new findings':>14}{'findings kept':>15}"
          + (f"{'mutants':>9}{'caught':>8}" if args.mutants else ""))
    for name in REWRITES:
        extra = sum(1 for line in new_findings if line.startswith(name + " "))
        row = f"{name:<18}{applied[name]:>7}{extra:>14}{kept[name]:>8}/{had[name]:<6}"
        if args.mutants:
            row += f"{mutants_total[name]:>9}{mutants_caught[name]:>8}"
        print(row)
    for line in new_findings:
        print("NEW " + line)
    if args.json:
        args.json.write_text(json.dumps({"new": new_findings, "applied": applied, "kept": kept, "had": had,
                                         "mutants": mutants_total, "caught": mutants_caught}, indent=1))
    return 1 if new_findings else 0


def all_findings(linter, path: Path, text: str, root: Path) -> list:
    """Every rule's findings (the mutation harness's linter runs GL001-GL005 only)."""
    from gradlint.engine.files import lint_text, options_for
    from gradlint.engine.config import ConfigResolver

    resolver = linter.resolvers.setdefault(root, ConfigResolver(root))
    options = options_for(path, resolver.for_path(path), None, ())
    report = lint_text(text, path, str(path), options, cache=linter.cache)
    return [f for f in report.findings if f.code not in ("GL000", "GL009")]


if __name__ == "__main__":
    sys.exit(main())
