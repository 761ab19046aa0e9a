"""pytest plugin of the dynamic oracle (``scripts/dynamic_oracle.py``): records what really
happens at gradcheck calls and custom autograd Functions while a package's own tests run.

Loaded with ``pytest -p oracle_probe`` (this directory on ``PYTHONPATH``); it writes JSON
lines to ``$GRADLINT_ORACLE_OUT``. Stdlib + torch only; it never changes what a test does:
every wrapper calls the original and re-raises what it raised.

Records (one line per distinct observation, with a count in the final summary line):

- ``gradcheck``: the call site (file, line), gradcheck or gradgradcheck, how the inputs
  were passed (positional count, the type of the inputs argument, keywords), and for each
  input: tensor or not, dtype, requires_grad, layout, whether a stride is 0; for an
  ``nn.Module`` as the checked function, whether it was in training mode; the outcome.
- ``apply``: a Function's ``apply`` call site, the class (module, name, file, line of its
  ``forward``/``backward``), the positional count and keywords, each argument's kind.
- ``backward``: a Function's backward ran: its file/line, how many values it returned,
  which were None, the kinds of the inputs of the matching ``apply``, or the exception
  backward raised.
"""

from __future__ import annotations

import atexit
import functools
import inspect
import json
import os
import sys
import threading

import torch
import torch.autograd
import torch.autograd.function as _function_module

_OUT = os.environ.get("GRADLINT_ORACLE_OUT")
_LOCK = threading.Lock()
_SEEN: dict[str, int] = {}
_DEPTH = threading.local()
_HERE = os.path.abspath(__file__)
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))


def _emit(record: dict) -> None:
    if not _OUT:
        return
    key = json.dumps(record, sort_keys=True, default=str)
    with _LOCK:
        count = _SEEN.get(key, 0)
        _SEEN[key] = count + 1
        if count == 0:
            with open(_OUT, "a", encoding="utf-8") as fh:
                fh.write(key + "\n")


@atexit.register
def _summary() -> None:
    if _OUT and _SEEN:
        with open(_OUT, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"kind": "counts", "counts": list(_SEEN.values())}) + "\n")


def _caller(skip_files: tuple[str, ...] = ()) -> tuple[str | None, int | None]:
    """The first frame outside this file, torch and ``skip_files``."""
    frame = sys._getframe(1)
    while frame is not None:
        name = os.path.abspath(frame.f_code.co_filename)
        if name != _HERE and not name.startswith(_TORCH_DIR) and name not in skip_files \
                and "functools" not in name:
            return name, frame.f_lineno
        frame = frame.f_back
    return None, None


def _kind(value) -> dict:
    if isinstance(value, torch.Tensor):
        info = {"type": "tensor", "dtype": str(value.dtype).replace("torch.", ""),
                "requires_grad": bool(value.requires_grad), "layout": str(value.layout)}
        try:
            info["zero_stride"] = value.layout == torch.strided and any(
                s == 0 and n > 1 for s, n in zip(value.stride(), value.shape))
        except Exception:  # noqa: BLE001  (sparse and other layouts)
            pass
        return info
    if value is None:
        return {"type": "None"}
    if isinstance(value, (bool, int, float, complex, str)):
        return {"type": type(value).__name__}
    return {"type": "other", "class": type(value).__qualname__}


def _error(error: BaseException) -> dict:
    text = str(error).strip().splitlines()
    return {"type": type(error).__name__, "message": text[0][:300] if text else ""}


# -- gradcheck ----------------------------------------------------------------------------
def _wrap_check(original, variant: str):
    @functools.wraps(original)
    def check(*args, **kwargs):
        if getattr(_DEPTH, "value", 0):  # gradgradcheck's own gradcheck: not a call site
            return original(*args, **kwargs)
        _DEPTH.value = 1
        try:
            return _checked(*args, **kwargs)
        finally:
            _DEPTH.value = 0

    def _checked(*args, **kwargs):
        file, line = _caller()
        positional = len(args)
        inputs = args[1] if len(args) > 1 else kwargs.get("inputs")
        func = args[0] if args else kwargs.get("func")
        if isinstance(inputs, torch.Tensor):
            elements = [inputs]
        elif isinstance(inputs, (tuple, list)):
            elements = list(inputs)
        else:
            elements = None
        record = {
            "kind": "gradcheck", "variant": variant, "file": file, "line": line,
            "positional": positional, "keywords": sorted(kwargs),
            "inputs_type": type(inputs).__qualname__,
            "inputs_is_tuple_subclass": isinstance(inputs, tuple) and type(inputs) is not tuple,
            "inputs": [_kind(e) for e in elements] if elements is not None else None,
            "module_training": bool(func.training) if isinstance(func, torch.nn.Module) else None,
        }
        try:
            result = original(*args, **kwargs)
        except BaseException as error:
            record["outcome"] = _error(error)
            _emit(record)
            raise
        record["outcome"] = {"type": "returned", "value": repr(result)[:40]}
        _emit(record)
        return result
    check.__gradlint_oracle__ = True
    return check


def _install_gradcheck() -> None:
    gradcheck_module = sys.modules["torch.autograd.gradcheck"]
    for variant in ("gradcheck", "gradgradcheck"):
        original = getattr(gradcheck_module, variant)
        if getattr(original, "__gradlint_oracle__", False):
            continue
        wrapped = _wrap_check(original, variant)
        setattr(gradcheck_module, variant, wrapped)
        setattr(torch.autograd, variant, wrapped)
    # torch.testing._internal.common_utils re-exports them
    common = sys.modules.get("torch.testing._internal.common_utils")
    if common is not None:
        for variant in ("gradcheck", "gradgradcheck"):
            setattr(common, variant, getattr(torch.autograd, variant))


# -- Function.apply and backward ----------------------------------------------------------
_WRAPPED_BACKWARDS: set[int] = set()


def _where(func) -> tuple[str | None, int | None]:
    func = inspect.unwrap(func)
    code = getattr(func, "__code__", None)
    if code is None:
        return None, None
    return os.path.abspath(code.co_filename), code.co_firstlineno


def _owner_of(cls, name: str):
    for klass in cls.__mro__:
        if name in vars(klass):
            return klass
    return None


def _wrap_backward(cls) -> None:
    """Replace the backward (or vjp) a Function uses by one that records what it returns."""
    for name in ("backward", "vjp"):
        owner = _owner_of(cls, name)
        if owner is None or owner in (_function_module.Function, _function_module._SingleLevelFunction) \
                or id(owner) in _WRAPPED_BACKWARDS:
            continue
        raw = vars(owner)[name]
        if not isinstance(raw, staticmethod):
            continue
        _WRAPPED_BACKWARDS.add(id(owner))
        original = raw.__func__
        file, line = _where(original)

        def backward(ctx, *grads, __original=original, __file=file, __line=line, __cls=owner):
            inputs = getattr(ctx, "__gradlint_oracle_inputs__", None)
            record = {"kind": "backward", "file": __file, "line": __line,
                      "class": __cls.__qualname__, "inputs": inputs}
            try:
                result = __original(ctx, *grads)
            except BaseException as error:
                record["outcome"] = _error(error)
                _emit(record)
                raise
            values = result if isinstance(result, tuple) else (result,)
            record["outcome"] = {"type": "returned", "count": len(values),
                                 "is_tuple": isinstance(result, tuple),
                                 "result_type": type(result).__qualname__,
                                 "none": [v is None for v in values]}
            _emit(record)
            return result

        setattr(owner, name, staticmethod(functools.wraps(original)(backward)))


def _install_apply() -> None:
    Function = _function_module.Function
    original = vars(Function)["apply"]
    if getattr(original.__func__, "__gradlint_oracle__", False):
        return
    original_func = original.__func__

    def apply(cls, *args, **kwargs):
        if cls.__module__.startswith("torch.") or cls.__module__ == "torch":
            return original_func(cls, *args, **kwargs)
        _wrap_backward(cls)
        file, line = _caller()
        forward_file, forward_line = _where(cls.forward) if "forward" in dir(cls) else (None, None)
        kinds = [_kind(a) for a in args]
        _emit({"kind": "apply", "file": file, "line": line, "class": cls.__qualname__,
               "module": cls.__module__, "forward_file": forward_file,
               "forward_line": forward_line, "positional": len(args),
               "keywords": sorted(kwargs), "args": kinds})
        result = original_func(cls, *args, **kwargs)
        outputs = result if isinstance(result, (tuple, list)) else (result,)
        for output in outputs:  # the ctx of this call is the outputs' grad_fn
            node = getattr(output, "grad_fn", None) if isinstance(output, torch.Tensor) else None
            if node is not None and getattr(node, "_forward_cls", None) is cls:
                try:
                    node.__gradlint_oracle_inputs__ = kinds
                except Exception:  # noqa: BLE001
                    pass
                break
        return result

    apply.__gradlint_oracle__ = True
    Function.apply = classmethod(apply)


_install_gradcheck()
_install_apply()


def pytest_configure(config):  # noqa: ARG001  (a plugin hook: re-install after imports)
    _install_gradcheck()


def pytest_collection_finish(session):  # noqa: ARG001
    _install_gradcheck()
