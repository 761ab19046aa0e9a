"""Walking libcst trees fast: the ``CSTVisitor`` protocol without rebuilding the tree.

``node.visit(visitor)`` in libcst rebuilds every node it passes (each node's
``_visit_and_replace_children`` calls the node's constructor, validation included), even for
a read-only ``CSTVisitor``; that made up most of gradlint's analysis time. ``visit(node,
visitor)`` calls the same hooks in the same order (``on_visit``/``visit_<Node>``, children in
lexical order, ``on_leave``/``leave_<Node>``) and skips children when the visit hook returns
``False``, but only reads the tree. Analysis code should call ``visit(node, visitor)`` and
``children(node)`` instead of ``node.visit(visitor)`` and ``node.children``.

Visitors that use attribute hooks (``visit_Call_func``, ``on_visit_attribute``) and
transformers go through libcst's own traversal, unchanged.
"""

from __future__ import annotations

import dataclasses
import weakref
from contextlib import contextmanager
from typing import Callable, Iterator

import libcst as cst

_CSTVisitor = cst.CSTVisitor
_CSTNode = cst.CSTNode


def _trivia() -> frozenset[type]:
    """Node classes whose subtrees hold only layout: whitespace, comments, newlines,
    operator tokens and brackets (an operator's meaning is read from its parent)."""
    from libcst._nodes import op, whitespace

    found = {cls for module in (op, whitespace) for cls in vars(module).values()
             if isinstance(cls, type) and issubclass(cls, _CSTNode) and cls.__module__ == module.__name__}
    found |= {cst.LeftParen, cst.RightParen, cst.LeftSquareBracket, cst.RightSquareBracket,
              cst.LeftCurlyBrace, cst.RightCurlyBrace}
    return frozenset(found)


# A visitor whose hooks name none of these classes (or, for one that overrides on_visit,
# that sets ``skip_trivia = True``) is not walked through them: about half of all nodes.
TRIVIA = _trivia()
_TRIVIA_NAMES = frozenset(cls.__name__ for cls in TRIVIA)

# node class -> names of its fields that may hold children, in lexical (visiting) order
_FIELDS: dict[type, tuple[str, ...]] = {}
# visitor class -> (node class -> (visit hook or None, leave hook or None)), or None: use
# libcst (weak: visitor classes defined inside functions come and go)
_PLANS: "weakref.WeakKeyDictionary[type, dict | None]" = weakref.WeakKeyDictionary()
_NO_PLAN: dict = {}  # marks "use libcst" in _PLANS (a WeakKeyDictionary cannot hold None)


class _Recorder(_CSTVisitor):
    """Learns the order in which libcst visits a node class's fields (once per class)."""

    def __init__(self) -> None:
        self.fields: list[str] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        return False

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        self.fields.append(attribute)


def _is_node(value: object) -> bool:
    """Classify a field value's type once (isinstance on libcst's ABC is slow)."""
    kind = type(value)
    if isinstance(value, _CSTNode):
        _NODE_TYPES.add(kind)
        return True
    _OTHER_TYPES.add(kind)
    return False


_NODE_TYPES: set[type] = set()
_OTHER_TYPES: set[type] = {str, int, float, bool, type(None)}


def _fields_of(node: cst.CSTNode) -> tuple[str, ...]:
    cls = type(node)
    fields = _FIELDS.get(cls)
    if fields is None:
        recorder = _Recorder()
        node._visit_and_replace_children(recorder)
        names = list(dict.fromkeys(recorder.fields))
        # a field libcst visits only under a condition (an f-string's format_spec when
        # present) was not seen on this instance: keep it, after the others
        names += [f.name for f in dataclasses.fields(cls) if f.name not in names]
        fields = _FIELDS[cls] = tuple(names)
    return fields


def exact_types(*classes: type) -> frozenset[type]:
    """``classes`` as a set for ``type(node) in ...``, which costs a fraction of
    ``isinstance`` (libcst's nodes are ABCs): only for classes nothing derives from."""
    for cls in classes:
        assert not cls.__subclasses__(), f"{cls.__name__} has subclasses: use isinstance"
    return frozenset(classes)


def is_exact(classes: tuple[type, ...]) -> bool:
    """Can ``isinstance(node, classes)`` be answered by ``type(node) in classes``?"""
    return all(not cls.__subclasses__() for cls in classes)


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """``node.children`` (in lexical order) without rebuilding ``node``."""
    found: list[cst.CSTNode] = []
    for name in _fields_of(node):
        value = getattr(node, name)
        if _is_node(value):
            found.append(value)
        elif type(value) is tuple or type(value) is list:
            found.extend(item for item in value if _is_node(item))
    return found


def _plan(visitor_class: type) -> dict | None:
    plan = _PLANS.get(visitor_class)
    if plan is None:
        if _readonly_with_node_hooks(visitor_class):
            plan = {_SKIP: _NOTHING if _hooks_trivia(visitor_class) else TRIVIA}
        else:
            plan = _NO_PLAN
        _PLANS[visitor_class] = plan
    return None if plan is _NO_PLAN else plan


_SKIP = object()  # the plan's entry for the node classes not to walk into
_NOTHING: frozenset[type] = frozenset()


def _hooks_trivia(visitor_class: type) -> bool:
    """Does the visitor hook a layout node (``visit_Comma``)? The same answer as asking
    ``_own_hook`` for every such name, from the few names its classes define: visitor
    classes defined inside functions are new classes on every call, so this runs often."""
    for klass in visitor_class.__mro__:
        if klass is _CSTVisitor:
            break
        for name in vars(klass):
            kind, _, rest = name.partition("_")
            if kind in ("visit", "leave") and rest in _TRIVIA_NAMES:
                return True
    return False


def _readonly_with_node_hooks(visitor_class: type) -> bool:
    """A ``CSTVisitor`` (not a transformer) without attribute hooks (``visit_Call_func``)."""
    if not issubclass(visitor_class, _CSTVisitor):
        return False
    for klass in visitor_class.__mro__:
        if klass is _CSTVisitor:
            break
        for name in vars(klass):
            if name in ("on_visit_attribute", "on_leave_attribute"):
                return False
            kind, _, rest = name.partition("_")
            if kind in ("visit", "leave") and "_" in rest and rest[:1].isupper():
                return False
    return True


@contextmanager
def libcst_traversal() -> Iterator[None]:
    """Within this block, ``visit`` uses libcst's own traversal (to check the fast one)."""
    global _USE_LIBCST
    previous, _USE_LIBCST = _USE_LIBCST, True
    try:
        yield
    finally:
        _USE_LIBCST = previous


_USE_LIBCST = False


def reference_run() -> bool:
    """Is this the reference run (within ``libcst_traversal``: an exhaustive lint)? Indexes
    built for speed then give way to the plain walks they stand for, so that comparing the
    two runs checks them too."""
    return _USE_LIBCST


def visit(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """Run ``visitor`` over ``node`` and its descendants (read-only)."""
    plan = None if _USE_LIBCST else _plan(type(visitor))
    if plan is None:
        node.visit(visitor)
        return
    cls = type(visitor)
    custom_visit = cls.on_visit is not _CSTVisitor.on_visit
    custom_leave = cls.on_leave is not _CSTVisitor.on_leave
    if custom_visit or custom_leave:
        skip = TRIVIA if getattr(visitor, "skip_trivia", False) else _NOTHING
        leaves = plan.get(_LEAVES)
        if leaves is None:
            leaves = plan[_LEAVES] = custom_leave or _has_leave_hooks(cls)
        _walk_generic(node, visitor, skip, leaves)
    else:
        _walk_hooks(node, visitor, plan, plan[_SKIP])


def _walk_generic(node: cst.CSTNode, visitor: cst.CSTVisitor, skip: frozenset, leaves: bool) -> None:
    """``leaves``: does the visitor's ``on_leave`` do anything (else it is not called)?"""
    if visitor.on_visit(node):
        for name in _FIELDS.get(type(node)) or _fields_of(node):
            value = getattr(node, name)
            kind = type(value)
            if kind in _NODE_TYPES:
                if kind not in skip:
                    _walk_generic(value, visitor, skip, leaves)
            elif kind is tuple or kind is list:
                for item in value:
                    item_kind = type(item)
                    if item_kind in _NODE_TYPES or (item_kind not in _OTHER_TYPES and _is_node(item)):
                        if item_kind not in skip:
                            _walk_generic(item, visitor, skip, leaves)
            elif kind not in _OTHER_TYPES and _is_node(value) and kind not in skip:
                _walk_generic(value, visitor, skip, leaves)
    if leaves:
        visitor.on_leave(node)


_LEAVES = object()  # the plan's entry for "on_leave does something" (generic walks)


def _has_leave_hooks(visitor_class: type) -> bool:
    """Does the visitor define a ``leave_<Node>`` hook? Without one (and without its own
    ``on_leave``), libcst's ``on_leave`` only looks up do-nothing defaults: not calling it
    changes nothing."""
    for klass in visitor_class.__mro__:
        if klass is _CSTVisitor:
            break
        if any(name.startswith("leave_") for name in vars(klass)):
            return True
    return False


def _hooks(visitor: cst.CSTVisitor, plan: dict, node_class: type
           ) -> tuple[Callable | None, Callable | None]:
    name = node_class.__name__
    hooks = plan[node_class] = (_own_hook(type(visitor), f"visit_{name}"),
                                _own_hook(type(visitor), f"leave_{name}"))
    return hooks


def _own_hook(visitor_class: type, name: str) -> Callable | None:
    """The visitor's hook, or None when it is CSTVisitor's do-nothing default."""
    hook = getattr(visitor_class, name, None)
    return None if hook is None or hook is getattr(_CSTVisitor, name, None) else hook


def _walk_hooks(node: cst.CSTNode, visitor: cst.CSTVisitor, plan: dict, skip: frozenset) -> None:
    enter, leave = plan.get(type(node)) or _hooks(visitor, plan, type(node))
    if enter is None or enter(visitor, node) is not False:
        for name in _FIELDS.get(type(node)) or _fields_of(node):
            value = getattr(node, name)
            kind = type(value)
            if kind in _NODE_TYPES:
                if kind not in skip:
                    _walk_hooks(value, visitor, plan, skip)
            elif kind is tuple or kind is list:
                for item in value:
                    item_kind = type(item)
                    if item_kind in _NODE_TYPES or (item_kind not in _OTHER_TYPES and _is_node(item)):
                        if item_kind not in skip:
                            _walk_hooks(item, visitor, plan, skip)
            elif kind not in _OTHER_TYPES and _is_node(value) and kind not in skip:
                _walk_hooks(value, visitor, plan, skip)
    if leave is not None:
        leave(visitor, node)


def collect(root: cst.CSTNode, wanted: frozenset[type], closed: frozenset[type]
            ) -> list[cst.CSTNode] | None:
    """The nodes of the ``wanted`` classes (exact classes) at or under ``root``, in the
    order a visitor meets them, without entering the descendants of a ``closed`` class
    (which are still collected when wanted) nor layout nodes.

    What a visitor that records in ``on_visit`` and returns False for closed classes
    finds, with neither a visitor nor its method calls per node. None within
    ``libcst_traversal`` (the caller then uses its visitor)."""
    if _USE_LIBCST:
        return None
    found: list[cst.CSTNode] = []
    _collect(root, wanted, closed, found)
    return found


def _collect(node: cst.CSTNode, wanted: frozenset[type], closed: frozenset[type],
             found: list[cst.CSTNode]) -> None:
    if type(node) in wanted:
        found.append(node)
    for name in _FIELDS.get(type(node)) or _fields_of(node):
        value = getattr(node, name)
        kind = type(value)
        if kind is tuple or kind is list:
            for item in value:
                item_kind = type(item)
                if item_kind in _NODE_TYPES or (item_kind not in _OTHER_TYPES and _is_node(item)):
                    if item_kind in TRIVIA:
                        continue
                    if item_kind in closed:
                        if item_kind in wanted:
                            found.append(item)
                    else:
                        _collect(item, wanted, closed, found)
        elif kind in _NODE_TYPES or (kind not in _OTHER_TYPES and _is_node(value)):
            if kind in TRIVIA:
                continue
            if kind in closed:
                if kind in wanted:
                    found.append(value)
            else:
                _collect(value, wanted, closed, found)
