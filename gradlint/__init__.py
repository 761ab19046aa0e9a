"""gradlint: find gradient bugs in custom PyTorch autograd code, and prove gradients.

The testing API is imported on first use (``gradlint.check_gradients`` needs torch; the
linter and the language server never load it):

- ``check_gradients(fn, *inputs, **options) -> GradientReport``
- ``assert_gradients(fn, *inputs, **options)``: AssertionError with the readable report
- ``@inputs(...)``: example inputs for a Function, shared with ``gradlint run`` and the editor
"""

__version__ = "0.1.0"

_LAZY = {
    "check_gradients": "gradlint.testing.api",
    "assert_gradients": "gradlint.testing.api",
    "GradientReport": "gradlint.testing.report",
    "inputs": "gradlint.testing.declare",
}

__all__ = ["GradientReport", "assert_gradients", "check_gradients", "inputs"]


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'gradlint' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted([*globals(), *_LAZY])
