"""torch.library custom ops as run targets: finding the op, its parameters, and opcheck.

A ``custom_op`` target names the op by its Python name (``qualname``: the object
``@torch.library.custom_op`` returns) or by its ``"ns::name"`` (``op``: ops made with
``torch.library.define``), reached as ``torch.ops.ns.name``. Inputs are synthesized from
the op's schema, whose types are exact. Besides gradcheck through the op, the ``opcheck``
check runs ``torch.library.opcheck`` (schema, autograd registration, fake tensor, AOT
dispatch), which does not run gradcheck itself: each failing test becomes a verdict and
points at the source to fix (the op's definition, its fake impl, its registered backward).
"""

import torch

from .inputs import params as P
from .introspect import def_of
from .outcome import Outcome
from .text import first_line

OPCHECK_TESTS = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")
# test -> (verdict, which source line to fix, what to say)
_OPCHECK_VERDICTS = {
    "test_schema": ("op_schema", "op", "the op's schema does not match what it does (mutates_args, or an output "
                                      "that is or views an input)"),
    "test_autograd_registration": ("op_autograd_registration", "op",
                                   "the op's autograd support is not registered through register_autograd"),
    "test_faketensor": ("op_fake_tensor", "fake", "the op's fake (meta) implementation is missing or wrong"),
    "test_aot_dispatch_dynamic": ("op_compile", "fake", "the op does not work under torch.compile"),
}


def is_op(obj):
    custom = getattr(getattr(torch, "_library", None), "custom_ops", None)
    kinds = tuple(k for k in (getattr(custom, "CustomOpDef", None), torch._ops.OpOverload,
                              torch._ops.OpOverloadPacket) if k is not None)
    return isinstance(obj, kinds)


def resolve(module, target, resolve_name):
    """The op object a ``custom_op`` target names."""
    qualname = target.get("qualname")
    if qualname:
        obj = resolve_name(module, qualname)
        if is_op(obj):
            return obj
    name = target.get("op")
    if isinstance(name, str) and "::" in name:
        namespace, _, op_name = name.partition("::")
        op_name = op_name.split(".")[0]
        try:
            return getattr(getattr(torch.ops, namespace), op_name)
        except (AttributeError, RuntimeError):
            pass
    raise Outcome("error", "target_not_found",
                  "✗ the custom op `%s` is not registered after importing the module"
                  % (name or qualname))


def overload(op):
    if isinstance(op, torch._ops.OpOverloadPacket):
        return getattr(op, "default", None)
    return getattr(op, "_opoverload", op)


def schema(op):
    ov = overload(op)
    return getattr(ov, "_schema", None)


def op_name(op):
    s = schema(op)
    return s.name if s is not None else str(op)


def schema_params(op):
    """[Param] from the op's schema: Tensor → a tensor that requires grad, int/float/bool..."""
    s = schema(op)
    if s is None:
        return None
    out = []
    for arg in s.arguments:
        text = str(arg.type)
        optional = text.endswith("?")
        core = text.rstrip("?")
        if arg.kwarg_only:
            param = P.Param(arg.name, P.DEFAULT, [arg.default_value], why="keyword-only")
            param.keyword_only = True
            if not arg.has_default_value():
                param.kind, param.why = P.OBJECT, "keyword-only without a default"
            out.append(param)
            continue
        if arg.has_default_value():
            out.append(P.Param(arg.name, P.DEFAULT, [arg.default_value], why="schema default"))
            continue
        if core == "Tensor":
            param = P.Param(arg.name, P.TENSOR, why="schema: %s" % text, optional=optional)
            param.requires_grad = not getattr(arg, "is_write", False) and not (arg.alias_info and arg.alias_info.is_write)
        elif core in ("int", "SymInt"):
            param = P.Param(arg.name, P.INT, P.int_candidates(arg.name), why="schema: %s" % text)
        elif core in ("float", "Scalar"):
            param = P.Param(arg.name, P.FLOAT, P.float_candidates(arg.name), why="schema: %s" % text)
        elif core == "bool":
            param = P.Param(arg.name, P.BOOL, [False, True], why="schema: %s" % text)
        elif core in ("int[]", "SymInt[]") or core.startswith(("int[", "SymInt[")):
            param = P.Param(arg.name, P.SIZE, why="schema: %s" % text)
        else:
            param = P.Param(arg.name, P.OBJECT, why="schema: %s" % text)
        out.append(param)
    return out


def has_autograd(op):
    """Does the op have a gradient formula (register_autograd, an Autograd kernel, or a
    composite implementation autograd differentiates through)?"""
    if hasattr(op, "_backward_fn"):
        return op._backward_fn is not None
    name = op_name(op)
    for key in ("Autograd", "AutogradCPU", "CompositeImplicitAutograd"):
        try:
            if torch._C._dispatch_has_kernel_for_dispatch_key(name, key):
                return True
        except Exception:
            return True  # cannot tell: let gradcheck say
    return False


def locations(op, target):
    """Where to fix each kind of problem: {"op", "backward", "setup_context", "fake"} → location."""
    found = {}
    fns = {"op": getattr(op, "_init_fn", None), "backward": getattr(op, "_backward_fn", None),
           "setup_context": getattr(op, "_setup_context_fn", None), "fake": getattr(op, "_abstract_fn", None)}
    for key, fn in fns.items():
        loc = def_of(fn) if fn is not None else None
        if loc is None and isinstance(target.get(key + "_line"), int) and target.get("file"):
            loc = {"file": target["file"], "line": target[key + "_line"], "function": None}
        if loc is not None:
            loc["reason"] = key
            found[key] = loc
    if "op" not in found and isinstance(target.get("line"), int) and target.get("file"):
        found["op"] = {"file": target["file"], "line": target["line"], "function": None, "reason": "op"}
    return found


def check_opcheck(subject, result):
    """torch.library.opcheck on the op at the checked inputs, one verdict per failing test."""
    op = subject.op
    tests = subject.opts.get("opcheck_tests") or OPCHECK_TESTS
    outcome = torch.library.opcheck(op, subject.fresh(), test_utils=tuple(tests), raise_exception=False)
    failed = [(test, value) for test, value in outcome.items() if value != "SUCCESS"]
    details = {"tests": dict((test, "SUCCESS" if value == "SUCCESS" else "%s: %s" % (
        type(value).__name__, first_line(str(value))[:400])) for test, value in outcome.items())}
    if not failed:
        return {"status": "pass", "details": details}
    test, error = failed[0]
    verdict, where, what = _OPCHECK_VERDICTS.get(test, ("op_schema", "op", "opcheck failed"))
    text = first_line(str(error))
    if verdict == "op_fake_tensor" and "no fake impl registered" in text:
        what, where = "the op has no fake implementation (needed by torch.compile, export, FX tracing)", "op"
    summary = "✗ opcheck %s: %s" % (test.replace("test_", ""), what)
    message = "%s: %s%s" % (type(error).__name__, text, "" if len(failed) == 1 else
                            " (also failing: %s)" % ", ".join(t for t, _ in failed[1:]))
    loc = subject.op_locations.get(where) or subject.op_locations.get("op")
    details["failed"] = [t for t, _ in failed]
    return {"status": "fail", "verdict": verdict, "message": summary, "details": details,
            "_outcome": Outcome("fail", verdict, summary, message, location=loc)}
