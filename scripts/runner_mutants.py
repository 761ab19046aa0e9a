"""Single-edit wrong backwards of a Function, for ``runner_accuracy.py``.

Each operator changes one thing in ``Class.backward`` (or ``vjp``), where it applies:

- ``scale``: the first returned gradient times 2;
- ``negate``: the first returned gradient negated;
- ``zero``: the first returned gradient replaced by zeros;
- ``swap``: the first two returned gradients swapped;
- ``drop``: the first returned gradient replaced by ``None`` (an input's gradient dropped);
- ``dim``: the first reduction with a literal dimension (``sum``, ``mean``, ``cumsum``, ``softmax`` ...)
  over another dimension (-1 <-> -2, 0 <-> 1, k -> k-1);
- ``term``: the first sum or difference of terms (one side a product, quotient or call) without its
  right-hand term;
- ``branch``: a wrong factor in one branch: the first ``torch.where(c, a, b)`` with ``2.0 * a``, else
  the first assignment in the first data-dependent ``if`` of backward times 2.

An operator that does not apply gives no mutant. Whether a mutant is really wrong is decided by a
hand gradcheck (``runner_hand.py``), never assumed.
"""

from __future__ import annotations

import libcst as cst

RETURN_MUTATIONS = ("scale", "negate", "swap", "zero", "drop")
BODY_MUTATIONS = ("dim", "term", "branch")
MUTATIONS = RETURN_MUTATIONS + BODY_MUTATIONS
REDUCTIONS = frozenset(("sum", "mean", "prod", "cumsum", "cumprod", "logsumexp", "softmax", "log_softmax",
                        "norm", "amax", "amin", "std", "var", "nansum", "nanmean", "logcumsumexp"))
# an `if` on these is about which gradients to compute, not a branch of the formula
_BOOKKEEPING = ("needs_input_grad", "None", "requires_grad", "isinstance", "is_cuda", "device", "dtype",
                "batch", "len(", "training", "shape", "dim()", "ndim")


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


def _scaled(node: cst.BaseExpression) -> cst.BaseExpression:
    return cst.parse_expression(f"2.0 * ({_code(node)})")


class _InBackward(cst.CSTTransformer):
    """Tracks whether the walk is inside ``class_name``'s (top-level) backward or vjp."""

    def __init__(self, class_name: str):
        self.class_name = class_name
        self.depth = 0
        self.in_class = False
        self.in_backward = False
        self._def = None
        self.changed = 0

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        if node.name.value == self.class_name and self.depth == 0:
            self.in_class = True
        self.depth += 1
        return True

    def leave_ClassDef(self, original, updated):
        self.depth -= 1
        if original.name.value == self.class_name and self.depth == 0:
            self.in_class = False
        return updated

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        if self.in_class and node.name.value in ("backward", "vjp") and not self.in_backward:
            self.in_backward = True
            self._def = node
        return True

    def leave_FunctionDef(self, original, updated):
        if self.in_backward and original is self._def:
            self.in_backward = False
        return updated


class BackwardMutator(_InBackward):
    """Mutates the returns of ``Class.backward`` (or ``vjp``) in one way."""

    def __init__(self, class_name: str, mutation: str):
        super().__init__(class_name)
        self.mutation = mutation

    def leave_Return(self, original: cst.Return, updated: cst.Return) -> cst.Return:
        if not self.in_backward or updated.value is None:
            return updated
        value = updated.value
        whole = value  # `(dx,) + (None,) * 5`: the gradients are the left tuple's
        concatenated = isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add) \
            and isinstance(value.left, cst.Tuple)
        if concatenated:
            value = value.left
        elements = list(value.elements) if isinstance(value, cst.Tuple) else None
        exprs = [e.value for e in elements] if elements is not None else [value]
        real = [i for i, e in enumerate(exprs) if not (isinstance(e, cst.Name) and e.value == "None")
                and not isinstance(e, cst.StarredElement)]
        if elements is not None and any(isinstance(e, cst.StarredElement) for e in elements):
            return updated  # `(*grads,)`: which gradient is which is not written here
        if not real:
            return updated
        first = real[0]
        new = list(exprs)
        wrap = lambda e: cst.parse_expression(f"({_code(e)})")  # noqa: E731
        if self.mutation == "scale":
            new[first] = cst.parse_expression(f"2.0 * {_code(wrap(exprs[first]))}")
        elif self.mutation == "negate":
            new[first] = cst.parse_expression(f"-{_code(wrap(exprs[first]))}")
        elif self.mutation == "zero":
            new[first] = cst.parse_expression(f"__import__('torch').zeros_like({_code(exprs[first])})")
        elif self.mutation == "drop":
            new[first] = cst.Name("None")
        elif self.mutation == "swap":
            if len(real) < 2:
                return updated
            a, b = real[0], real[1]
            new[a], new[b] = exprs[b], exprs[a]
        self.changed += 1
        if elements is None:
            return updated.with_changes(value=new[0])
        tuple_ = value.with_changes(elements=[e.with_changes(value=v) for e, v in zip(elements, new)])
        return updated.with_changes(value=whole.with_changes(left=tuple_) if concatenated else tuple_)


def _int_literal(node: cst.BaseExpression) -> int | None:
    if isinstance(node, cst.Integer):
        return int(node.value)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) \
            and isinstance(node.expression, cst.Integer):
        return -int(node.expression.value)
    return None


def _other_dim(d: int) -> int:
    return {-1: -2, -2: -1, 0: 1, 1: 0}.get(d, d - 1 if d > 0 else d + 1)


def _has_term(node: cst.BaseExpression) -> bool:
    """A product, quotient, matmul or call: a term of a gradient formula (not index arithmetic)."""
    if isinstance(node, cst.Call):
        return True
    if isinstance(node, cst.BinaryOperation):
        if isinstance(node.operator, (cst.Multiply, cst.Divide, cst.MatrixMultiply)):
            return True
        return _has_term(node.left) or _has_term(node.right)
    return False


class BodyMutator(_InBackward):
    """``dim``, ``term`` or ``branch``: one edit inside backward's body (the first place it applies)."""

    def __init__(self, class_name: str, mutation: str):
        super().__init__(class_name)
        self.mutation = mutation
        self.subscripts = 0
        self.branch_if = None  # the `if` whose first assignment is scaled

    def visit_Subscript(self, node) -> bool:
        self.subscripts += 1
        return True

    def leave_Subscript(self, original, updated):
        self.subscripts -= 1
        return updated

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if not self.in_backward or self.changed:
            return updated
        func = updated.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        if self.mutation == "dim" and name in REDUCTIONS:
            args = list(updated.args)
            is_method = isinstance(func, cst.Attribute) and not (
                isinstance(func.value, cst.Name) and func.value.value in ("torch", "F", "functional"))
            for i, arg in enumerate(args):
                positional = arg.keyword is None and i == (0 if is_method else 1)
                keyword = arg.keyword is not None and arg.keyword.value in ("dim", "axis")
                d = _int_literal(arg.value) if (positional or keyword) else None
                if d is not None:
                    args[i] = arg.with_changes(value=cst.parse_expression(str(_other_dim(d))))
                    self.changed += 1
                    return updated.with_changes(args=args)
        if self.mutation == "branch" and name == "where" and len(updated.args) == 3:
            args = list(updated.args)
            args[1] = args[1].with_changes(value=_scaled(args[1].value))
            self.changed += 1
            return updated.with_changes(args=args)
        return updated

    def leave_BinaryOperation(self, original, updated):
        if self.mutation != "term" or not self.in_backward or self.changed or self.subscripts:
            return updated
        if not isinstance(updated.operator, (cst.Add, cst.Subtract)):
            return updated
        literal = (cst.Integer, cst.Float)
        if isinstance(updated.left, literal) or isinstance(updated.right, literal):
            return updated
        if not (_has_term(updated.left) or _has_term(updated.right)):
            return updated
        self.changed += 1
        return cst.parse_expression(f"({_code(updated.left)})")

    def visit_If(self, node: cst.If) -> bool:
        if self.mutation == "branch" and self.in_backward and self.branch_if is None and not self.changed:
            test = _code(node.test)
            if not any(word in test for word in _BOOKKEEPING) and "ctx." not in test:
                self.branch_if = node
        return True

    def leave_Assign(self, original: cst.Assign, updated: cst.Assign):
        if self.mutation == "branch" and self.branch_if is not None and not self.changed \
                and self._inside(original, self.branch_if):
            self.changed += 1
            return updated.with_changes(value=_scaled(updated.value))
        return updated

    def _inside(self, node, if_node) -> bool:
        body = if_node.body
        statements = body.body if isinstance(body, cst.IndentedBlock) else [body]
        for statement in statements:
            inner = getattr(statement, "body", None)
            for small in (inner if isinstance(inner, (list, tuple)) else []):
                if small is node:
                    return True
        return False


def mutate(source: str, class_name: str, mutation: str) -> str | None:
    """``source`` with one mutation of ``class_name``'s backward, or None when it does not apply."""
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError:
        return None
    if mutation in BODY_MUTATIONS:
        body = BodyMutator(class_name, mutation)
        if mutation == "branch":  # a `where` first; else the first data-dependent `if`
            where = BodyMutator(class_name, "branch")
            where.visit_If = lambda node: True  # noqa: E731 - only `where` calls
            new = module.visit(where)
            if where.changed:
                return new.code
        new = module.visit(body)
        return new.code if body.changed else None
    mutator = BackwardMutator(class_name, mutation)
    new = module.visit(mutator)
    return new.code if mutator.changed else None
