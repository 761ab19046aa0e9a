"""`@gradlint.inputs(...)`: example inputs declared next to a Function, a custom op or a
function.

The declaration is read three ways, all giving the same values:

- ``gradlint run`` and the editor read it from the source (gradlint/analysis/declarations.py):
  the decorator's arguments become one tuple expression, evaluated in the module's
  namespace after seeding torch's RNG (like a ``# gradlint: inputs=`` comment);
- ``pytest --gradlint`` sends that same request to the runner's checks, in-process;
- ``check_gradients(fn)`` with no inputs re-evaluates nothing: it uses the values the
  decorator received, kept on the object as ``__gradlint_inputs__``.

This module imports neither torch nor anything else: decorating costs nothing.
"""

from __future__ import annotations

from typing import Any, Callable, TypeVar

ATTRIBUTE = "__gradlint_inputs__"

T = TypeVar("T")


def inputs(*values: Any) -> Callable[[T], T]:
    """Declare the inputs gradient checks use for the decorated Function or function.

    ``@gradlint.inputs(torch.randn(3, 4), torch.randn(4))`` above
    ``class MatVec(torch.autograd.Function)`` declares one input per argument of
    ``forward`` (without ``ctx``); values may be tensors or anything else forward takes.
    Tensors need not be float64 nor require grad: the checks run on float64 copies and,
    when no tensor requires grad, differentiate with respect to every floating-point one.
    """

    def declare(target: T) -> T:
        try:
            setattr(target, ATTRIBUTE, values)
        except (AttributeError, TypeError):
            raise TypeError(f"@gradlint.inputs cannot be attached to {target!r}: decorate a "
                            "Function class, a custom op or a function") from None
        return target

    return declare


def declared(target: Any) -> tuple | None:
    """The inputs declared on ``target`` (a Function class, its ``apply``, a function)."""
    found = getattr(target, ATTRIBUTE, None)
    if found is None:
        owner = getattr(target, "__self__", None)  # Function.apply is bound to the class
        found = getattr(owner, ATTRIBUTE, None) if isinstance(owner, type) else None
    if found is None:  # a custom op decorated below @torch.library.custom_op
        found = getattr(getattr(target, "_init_fn", None), ATTRIBUTE, None)
    return found
