"""Values that tests keep on objects, followed where nothing else can change them.

Real test suites rarely build gradcheck's inputs on the line before the call: a
``unittest.TestCase`` builds them in ``setUp``, a case is a dataclass or a NamedTuple, a
module keeps a Function instance from its ``__init__``. Each function here finds the one
expression such a value comes from, with the site to evaluate it at, or None when
anything the analysis does not follow could give the object another value: another
assignment, ``setattr``/``vars``/``__dict__``, a subclass, a helper it is handed to, an
in-place change. The evaluator (facts.py) turns the expression into a fact.
"""

from __future__ import annotations

from typing import Sequence

import libcst as cst

from .codegen import node_code
from .names import BindingKind, body_statements
from .scopes import Frame, ModuleContext, Scope, Site, function_scope
from .traverse import visit

__all__ = ["constructor_attribute", "field_value", "is_test_case", "set_up_value"]

_TEST_CASE_BASES = frozenset({"unittest.TestCase", "unittest.case.TestCase",
                              "torch.testing._internal.common_utils.TestCase"})
# names that set or read attributes by name: what they do to an object is not followed
_REFLECTIVE = frozenset({"setattr", "delattr", "vars", "__dict__", "__setattr__",
                         "__getattribute__"})
# unittest's own methods of `self`: they do not change the test's attributes
_TEST_CASE_METHODS = ("assert", "fail", "skipTest", "subTest", "addCleanup", "id",
                      "shortDescription")


# -- unittest: attributes set in setUp -------------------------------------------------
def is_test_case(owner: Scope, context: ModuleContext) -> bool:
    """A class deriving directly from unittest's (or torch's) TestCase only."""
    node = owner.node
    if not isinstance(node, cst.ClassDef) or not node.bases or owner.parent is None:
        return False
    return all(base.keyword is None and context.qualified(base.value, owner.parent) in _TEST_CASE_BASES
               for base in node.bases)


def set_up_value(expr: cst.Attribute, site: Site, owner: Scope, context: ModuleContext
                 ) -> tuple[cst.BaseExpression, Site] | None:
    """``self.x`` read in a method of the TestCase ``owner``: the value ``setUp`` (or
    ``setUpClass``) assigns, and where, when that is the one binding of ``x`` in the
    class, a plain statement at the top of setUp, and nothing can change it before the
    read: no later statement of setUp mentions it (nor calls a base's setUp), no subclass
    in the module, no reflection, and neither the test method nor the class's own methods
    it calls change ``self.x`` in place or hand it to other code. For ``setUpClass`` (one
    value shared by every test) no method of the class may change it."""
    attr = expr.attr.value
    cls = owner.node
    if not isinstance(cls, cst.ClassDef) or attr in owner.table.bindings:
        return None  # a class attribute, a property, a method of that name: another path
    setup = next((s for s in owner.statements if isinstance(s, cst.FunctionDef)
                  and s.name.value in ("setUp", "setUpClass") and attribute_targets(s, attr)), None)
    if setup is None or reflective(cls) or _derived_from(cls.name.value, context.statements):
        return None
    once = setup.name.value == "setUpClass"
    if [_decorator_name(d) for d in setup.decorators] != (["classmethod"] if once else []):
        return None
    targets = attribute_targets(cls, attr)
    params = [p.name.value for p in setup.params.params]
    if len(targets) != 1 or not params:
        return None
    target = targets[0]
    if not (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)
            and target.value.value == params[0]):
        return None
    setup_scope = function_scope(setup, owner, site)
    statements = setup_scope.statements
    found = next((index for index, stmt in enumerate(statements)
                  if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
                  and isinstance(stmt.body[0], cst.Assign) and len(stmt.body[0].targets) == 1
                  and stmt.body[0].targets[0].target is target), None)
    if found is None:
        return None  # assigned in a branch, a loop, or with other targets
    if any(mentions_attribute(stmt, attr) or _calls_super(stmt) for stmt in statements[found + 1:]):
        return None  # changed (or read by a base's setUp) after the assignment
    method = site.scope.node
    if not isinstance(method, cst.FunctionDef) or changes_attribute(method, attr, site):
        return None
    methods = [s for s in owner.statements if isinstance(s, cst.FunctionDef) and s is not setup]
    if once:
        if any(changes_attribute(other, attr, None) for other in methods):
            return None
    elif _calls_changing_methods(method, methods, attr):
        return None
    assign = statements[found].body[0]  # type: ignore[union-attr]
    assert isinstance(assign, cst.Assign)
    return assign.value, Site(setup_scope, (Frame(statements, found),))


def _calls_changing_methods(method: cst.FunctionDef, methods: Sequence[cst.FunctionDef],
                            attr: str) -> bool:
    """Does the test method hand ``self`` to other code, or call one of the class's
    methods that changes ``self.<attr>`` (or hands it to other code)?"""
    params = [p.name.value for p in method.params.params]
    if not params:
        return True
    me = params[0]
    by_name = {m.name.value: m for m in methods}
    found: list[cst.CSTNode] = []

    class Finder(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if any(isinstance(a.value, cst.Name) and a.value.value == me for a in node.args):
                found.append(node)  # `helper(self)`
            func = node.func
            if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and \
                    func.value.value == me and not func.attr.value.startswith(_TEST_CASE_METHODS):
                called = by_name.get(func.attr.value)
                if called is None or changes_attribute(called, attr, None):
                    found.append(node)  # an inherited or changing method

    visit(method.body, Finder())
    return bool(found)


# -- dataclass and NamedTuple fields -----------------------------------------------------
_RECORD_METHODS = frozenset({"__init__", "__new__", "__post_init__", "__setattr__", "__getattr__",
                             "__getattribute__", "__init_subclass__", "__set_name__"})
# `dataclasses.field(...)` arguments that keep a field an ordinary `__init__` parameter
_PLAIN_FIELD_ARGUMENTS = frozenset({"default", "default_factory", "repr", "compare", "hash",
                                    "metadata"})


def field_value(expr: cst.Attribute, site: Site, context: ModuleContext
                ) -> tuple[cst.BaseExpression, Site] | None:
    """``case.x`` where ``case = Case(x=..., y=...)`` was bound once, earlier at the top
    level of the same function, to a same-module dataclass or NamedTuple that defines its
    fields plainly (no ``__init__``, ``__post_init__``, properties, ``init=False``...): the
    argument given for ``x``, and where. Only when ``case`` is used nowhere but in reads
    of its attributes (not handed to other code, not aliased: even a NamedTuple's tensors
    can be changed in place there), no attribute of it is assigned, and ``case.x`` is not
    changed in place or handed to a call outside the statement of the read."""
    obj, attr = expr.value.value, expr.attr.value  # type: ignore[union-attr]
    scope = site.scope
    function = scope.node
    if scope.kind != "function" or not isinstance(function, cst.FunctionDef) or not site.frames \
            or reflective(function):
        return None
    binding = scope.table.single_assignment(obj)
    if binding is None or not isinstance(binding.value, cst.Call):
        return None
    call = binding.value
    statements = scope.statements
    position = next((i for i, stmt in enumerate(statements) if isinstance(stmt, cst.SimpleStatementLine)
                     and any(small is binding.node for small in stmt.body)), None)
    if position is None or position >= site.frames[0].index:
        return None  # bound in a compound statement, or not before the use
    fields = _record_fields(call.func, context)
    if fields is None or attr not in fields or any(a.star for a in call.args):
        return None
    if _used_otherwise(function, obj) or changes_attribute(function, attr, site):
        return None
    positional = [a for a in call.args if a.keyword is None]
    index = fields.index(attr)
    value = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == attr), None)
    if value is None and index < len(positional):
        value = positional[index].value
    if value is None:
        return None  # a default (or a missing argument): not followed
    return value, Site(scope, (Frame(statements, position),))


def _record_fields(func: cst.BaseExpression, context: ModuleContext) -> list[str] | None:
    """The field names, in order, of the module-level dataclass or NamedTuple class named
    by ``func`` when its ``__init__`` is the generated one taking them in that order."""
    if not isinstance(func, cst.Name):
        return None
    bindings = context.scope.table.bindings.get(func.value, [])
    if len(bindings) != 1 or bindings[0].kind is not BindingKind.CLASS:
        return None
    node = bindings[0].node
    if not isinstance(node, cst.ClassDef):
        return None
    named_tuple = [context.qualified(b.value, context.scope) for b in node.bases] == ["typing.NamedTuple"]
    dataclass = False
    for decorator in node.decorators:
        target = decorator.decorator
        call = target if isinstance(target, cst.Call) else None
        if context.qualified(call.func if call else target, context.scope) != "dataclasses.dataclass":
            return None
        dataclass = True
        for arg in (call.args if call else ()):
            if arg.keyword is None or arg.keyword.value in ("init", "kw_only") or \
                    not isinstance(arg.value, cst.Name) or arg.value.value not in ("True", "False"):
                return None
    if not (named_tuple and not node.decorators or dataclass and not node.bases):
        return None
    fields: list[str] = []
    for stmt in body_statements(node.body):
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            decorators = {d.decorator.value for d in stmt.decorators if isinstance(d.decorator, cst.Name)} \
                if isinstance(stmt, cst.FunctionDef) else set()
            if stmt.name.value in _RECORD_METHODS or "property" in decorators:
                return None
            continue
        if not isinstance(stmt, cst.SimpleStatementLine):
            return None
        for small in stmt.body:
            if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
                annotation = node_code(small.annotation.annotation)
                if any(word in annotation for word in ("ClassVar", "InitVar", "KW_ONLY")) or \
                        not _plain_field(small.value, context):
                    return None
                fields.append(small.target.value)
            elif not isinstance(small, (cst.Expr, cst.Pass)):
                return None
    return fields


def _plain_field(default: cst.BaseExpression | None, context: ModuleContext) -> bool:
    """A default that keeps the field a plain ``__init__`` parameter (``field(init=False)``
    or ``kw_only=True`` would not)."""
    if not isinstance(default, cst.Call):
        return True
    if context.qualified(default.func, context.scope) != "dataclasses.field":
        return True
    return all(a.keyword is not None and a.keyword.value in _PLAIN_FIELD_ARGUMENTS for a in default.args)


def _used_otherwise(function: cst.FunctionDef, name: str) -> bool:
    """Is ``name`` used in ``function`` other than by its one binding and by reads of its
    attributes (``name.x``)? An attribute assigned (``name.x = ...``), a ``del``, the
    object handed to a call, aliased, returned, iterated: any of these."""
    reads: set[int] = set()
    uses: list[cst.Name] = []
    changes: list[cst.CSTNode] = []

    def is_its_attribute(target: cst.BaseExpression) -> bool:
        return isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and \
            target.value.value == name

    class Finder(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> None:
            if is_its_attribute(node):
                reads.add(id(node.value))

        def visit_AssignTarget(self, target: cst.AssignTarget) -> None:
            if is_its_attribute(target.target):
                changes.append(target)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            if is_its_attribute(node.target):
                changes.append(node)

        def visit_Del(self, node: cst.Del) -> None:
            changes.append(node)  # (any `del`: not followed)

        def visit_Name(self, node: cst.Name) -> None:
            if node.value == name:
                uses.append(node)

    visit(function.body, Finder())
    return bool(changes) or len([n for n in uses if id(n) not in reads]) != 1


# -- attributes set in __init__ ------------------------------------------------------------
def constructor_attribute(class_node: cst.ClassDef, attr: str) -> cst.BaseExpression | None:
    """The value of ``self.<attr> = value`` when that is the one binding of ``attr`` in the
    class: a top-level statement of ``__init__`` (undecorated), nothing else in the class
    assigns or deletes it, no reflection, and no class attribute, property or method of
    that name. (Subclasses elsewhere are not seen: the value holds for instances of this
    class.)"""
    if reflective(class_node) or any(
            isinstance(s, (cst.FunctionDef, cst.ClassDef)) and s.name.value == attr or
            isinstance(s, cst.SimpleStatementLine) and mentions_name_binding(s, attr)
            for s in body_statements(class_node.body)):
        return None
    targets = attribute_targets(class_node, attr)
    if len(targets) != 1:
        return None
    init = next((stmt for stmt in body_statements(class_node.body) if isinstance(stmt, cst.FunctionDef)
                 and stmt.name.value == "__init__"), None)
    if init is None or init.decorators:
        return None
    params = [p.name.value for p in init.params.params]
    for stmt in body_statements(init.body):
        if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and \
                isinstance(stmt.body[0], cst.Assign) and len(stmt.body[0].targets) == 1:
            target = stmt.body[0].targets[0].target
            if target is targets[0] and isinstance(target, cst.Attribute) and \
                    isinstance(target.value, cst.Name) and params and target.value.value == params[0]:
                return stmt.body[0].value
    return None


def mentions_name_binding(stmt: cst.SimpleStatementLine, name: str) -> bool:
    """Does a class-body statement bind ``name`` (``name = ...``, ``name: T = ...``)?"""
    for small in stmt.body:
        targets: list[cst.BaseExpression] = []
        if isinstance(small, cst.Assign):
            targets = [t.target for t in small.targets]
        elif isinstance(small, (cst.AnnAssign, cst.AugAssign)):
            targets = [small.target]
        if any(isinstance(t, cst.Name) and t.value == name for t in targets):
            return True
    return False


# -- what code does to attributes --------------------------------------------------------
def reflective(node: cst.CSTNode) -> bool:
    """``setattr``, ``delattr``, ``__dict__``, ``vars(...)``, ``__getattribute__``:
    attributes set or read by name."""
    found: list[cst.Name] = []

    class Finder(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            if name.value in _REFLECTIVE:
                found.append(name)

    visit(node, Finder())
    return bool(found)


def attribute_targets(node: cst.CSTNode, attr: str) -> list[cst.CSTNode]:
    """Every place in ``node`` that binds or deletes ``<something>.attr``."""
    found: list[cst.CSTNode] = []

    def check(target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Attribute) and target.attr.value == attr:
            found.append(target)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                check(element.value)
        elif isinstance(target, cst.StarredElement):
            check(target.value)

    class Finder(cst.CSTVisitor):
        def visit_AssignTarget(self, target: cst.AssignTarget) -> None:
            check(target.target)

        def visit_AugAssign(self, assign: cst.AugAssign) -> None:
            check(assign.target)

        def visit_AnnAssign(self, assign: cst.AnnAssign) -> None:
            check(assign.target)

        def visit_For(self, loop: cst.For) -> None:
            check(loop.target)

        def visit_CompFor(self, loop: cst.CompFor) -> None:
            check(loop.target)

        def visit_Del(self, node: cst.Del) -> None:
            check(node.target)

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            check(node.target)

        def visit_WithItem(self, item: cst.WithItem) -> None:
            if item.asname is not None:
                check(item.asname.name)

    visit(node, Finder())
    return found


def mentions_attribute(node: cst.CSTNode, attr: str) -> bool:
    found: list[cst.Attribute] = []

    class Finder(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> None:
            if node.attr.value == attr:
                found.append(node)

    visit(node, Finder())
    return bool(found)


def changes_attribute(function: cst.FunctionDef, attr: str, site: Site | None) -> bool:
    """In ``function``: ``<name>.attr.requires_grad_()`` or another in-place method,
    ``<name>.attr.y = ...``, ``<name>.attr[i] = ...``, or ``<name>.attr`` handed to a call
    outside the statement of ``site`` (the statement being evaluated; a helper may change
    it in place)."""
    statement = site.frames[0].statements[site.frames[0].index] if site and site.frames else None
    found: list[cst.CSTNode] = []

    def is_it(node: cst.BaseExpression) -> bool:
        return isinstance(node, cst.Attribute) and node.attr.value == attr and \
            isinstance(node.value, cst.Name)

    class Finder(cst.CSTVisitor):
        def __init__(self, inside: bool) -> None:
            self.inside = inside

        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            if isinstance(func, cst.Attribute) and is_it(func.value) and \
                    func.attr.value.endswith("_") and not func.attr.value.startswith("_"):
                found.append(node)
            if not self.inside and any(is_it(a.value) for a in node.args):
                found.append(node)

        def visit_AssignTarget(self, target: cst.AssignTarget) -> None:
            if isinstance(target.target, (cst.Attribute, cst.Subscript)) and is_it(target.target.value):
                found.append(target)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            if is_it(node.target) or isinstance(node.target, (cst.Attribute, cst.Subscript)) and \
                    is_it(node.target.value):
                found.append(node)

    for stmt in body_statements(function.body):
        visit(stmt, Finder(inside=stmt is statement))
    return bool(found)


def _derived_from(name: str, statements: Sequence[cst.BaseStatement]) -> bool:
    """Does a class in ``statements`` derive from one named ``name``?"""
    found: list[cst.ClassDef] = []

    class Finder(cst.CSTVisitor):
        def visit_ClassDef(self, node: cst.ClassDef) -> None:
            for base in node.bases:
                value = base.value
                if (isinstance(value, cst.Name) and value.value == name) or \
                        (isinstance(value, cst.Attribute) and value.attr.value == name):
                    found.append(node)

    for stmt in statements:
        visit(stmt, Finder())
    return bool(found)


def _calls_super(node: cst.CSTNode) -> bool:
    found: list[cst.Call] = []

    class Finder(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Name) and node.func.value == "super":
                found.append(node)

    visit(node, Finder())
    return bool(found)


def _decorator_name(decorator: cst.Decorator) -> str | None:
    node = decorator.decorator
    return node.value if isinstance(node, cst.Name) else None
