"""Files of many shapes, generated at any size, for the scaling benchmark (bench_shapes.py).

Each shape repeats a unit of autograd code, numbered apart (``{n}``) so that no two units
share a block, until the file reaches the lines asked for. The shapes stress what a linter
may do once per Function, per call or per name: if any of that walks the whole module (or
a whole class), doubling the file more than doubles the time.

  autograd        the project's own benchmark file (benchmarks/autograd_corpus.py)
  saves_nothing   Functions whose forward saves no tensor, backwards that unpack some anyway
  subclasses      Functions derived from Functions (chains, far-away bases, mixins)
  gradchecks      tests of hundreds of gradcheck/gradgradcheck calls each (a quarter of
                  the file up to 8,000 lines, then 700 calls per test)
  long_class      the whole file is one TestCase class whose tests define local Functions
                  (torch's test_autograd.py has that shape)
  deep_nesting    Functions and checks inside functions, branches, loops and with blocks
                  twelve levels deep, with deeply nested expressions
  custom_ops      torch.library custom ops with fakes, autograd registrations and mistakes
  aliases         module-level aliases: `fn_n = Fn_n.apply`, partials of gradcheck
  mixed           generated autograd code with non-ASCII names and every classic mistake
                  (the file of issue 26)
  notebook        a notebook (.ipynb) whose many cells each define and check a Function
  globals         module-level tensors and helpers that tests far below use (each lookup
                  of a module-level name from a function)
  sparse          a big module of plain code (non-ASCII names too) with a Function, its test
                  and a helper that makes its input every few hundred lines: only part of it
                  needs parsing, found through names

Run ``python benchmarks/shapes.py SHAPE LINES > file`` to look at one.
"""

from __future__ import annotations

import json
import sys
from typing import Callable

from autograd_corpus import UNIT as AUTOGRAD_UNIT, HEADER as AUTOGRAD_HEADER

HEADER = '''"""Generated: {shape}."""

import functools
import math
import unittest

import torch
import torch.nn.functional as F
from torch.autograd import Function, gradcheck, gradgradcheck
from torch.autograd.function import once_differentiable
from torch.func import jacrev, vmap

'''

SAVES_NOTHING = '''

class Scale{n}(Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.k = k
        ctx.shape = x.shape
        return x * k

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * ctx.k, None


class Shift{n}(Function):
    @staticmethod
    def forward(ctx, x):
        y = x + {n}
        return y

    @staticmethod
    def backward(ctx, grad):
        saved = ctx.saved_tensors
        return grad * saved[0]


class Ident{n}(Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad


def test_saves_nothing_{n}():
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    assert gradcheck(Scale{n}.apply, (x, 2.0))
    assert gradcheck(Shift{n}.apply, (x,))
    assert gradcheck(Ident{n}.apply, (x,))
'''

SUBCLASSES = '''

class Base{n}(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.cos()


class Child{n}(Base{n}):
    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return grad * x


class Grand{n}(Child{n}):
    pass


class Far{n}(Base{far}, torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.k = k
        return Base{far}.forward(ctx, x) * k

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.k


class Leaf{n}(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


def test_subclasses_{n}():
    x = torch.randn(5, dtype=torch.double, requires_grad=True)
    assert gradcheck(Child{n}.apply, (x,))
    assert gradgradcheck(Grand{n}.apply, (x,))
    assert gradcheck(Far{n}.apply, (x, 3.0))
    assert gradcheck(Leaf{n}.apply, (x,))
'''

GRADCHECK_LINE = ("    assert gradcheck({fn}, ({x},), eps=1e-6, atol=1e-4)\n"
                  "    assert gradgradcheck({fn}, ({x},))\n")
GRADCHECK_FNS = ["torch.sin", "torch.tanh", "Twice{n}.apply", "F.softplus", "torch.exp",
                 "lambda t: t.pow(2).sum()", "functools.partial(torch.clamp, min=-1.0)"]


def _gradchecks(n: int, calls: int) -> str:
    lines = []
    for i in range(calls):
        fn = GRADCHECK_FNS[i % len(GRADCHECK_FNS)].format(n=n)
        dtype = "" if i % 5 == 0 else ", dtype=torch.float64"  # every fifth: GL001
        lines.append(f"    x{i} = torch.randn({i % 4 + 2}, 3{dtype}, requires_grad=True)\n")
        lines.append(GRADCHECK_LINE.format(fn=fn, x=f"x{i}"))
    return (f"\n\nclass Twice{n}(Function):\n    @staticmethod\n    def forward(ctx, x):\n"
            f"        return x * 2\n\n    @staticmethod\n    def backward(ctx, grad):\n"
            f"        return grad * 2\n\n\ndef test_many_checks_{n}():\n" + "".join(lines))


def gradchecks(lines: int, start: int = 0) -> str:
    """Tests of hundreds of gradcheck calls that grow with the file up to 8,000 lines (four
    tests: a test twice as long in a file twice as long, so per-call walks of the whole test
    show up), then more tests of 700 calls (2,100 lines) each."""
    calls = min(700, max(8, -(-(lines - 60) // 12) + 1))
    return _units(_header("gradchecks"), lambda n: _gradchecks(n, calls), lines, start)


LONG_CLASS_HEADER = "\n\nclass TestAutograd(unittest.TestCase):\n"
LONG_CLASS_UNIT = '''
    def test_local_function_{n}(self):
        class Local{n}(Function):
            @staticmethod
            def forward(ctx, x, y):
                ctx.save_for_backward(x)
                return x * y

            @staticmethod
            def backward(ctx, grad):
                x, = ctx.saved_tensors
                return grad * y, grad * x

        a = torch.randn(3, requires_grad=True)
        b = torch.randn(3, dtype=torch.double, requires_grad=True)
        self.assertTrue(gradcheck(Local{n}.apply, (a, b)))
        self.assertTrue(gradgradcheck(lambda t: Local{n}.apply(t, b), (b,)))

    def test_helper_{n}(self):
        x = torch.randn(4, 4, dtype=torch.double, requires_grad=True)
        out = self._helper_{n}(x)
        self.assertEqual(out.shape, x.shape)
        gradcheck(torch.tanh, (x,), raise_exception=False)

    def _helper_{n}(self, x):
        return torch.tanh(x) * {n}
'''

DEEP_UNIT = '''

def outer_{n}(flag, items):
    if flag:
        for item in items:
            with torch.no_grad():
                try:
                    while item:
                        def inner_{n}(k):
                            if k > 1:
                                class Deep{n}(Function):
                                    @staticmethod
                                    def forward(ctx, x):
                                        z = x * k
                                        return z

                                    @staticmethod
                                    def backward(ctx, grad):
                                        if grad is not None:
                                            for _ in range(1):
                                                return grad * z
                                        return None
                                x = torch.randn(2, requires_grad=True)
                                return gradcheck(Deep{n}.apply, (x,))
                            return None
                        item = inner_{n}(item)
                except ValueError:
                    pass
    value = ((((((((((((((((((((1 + {n}) * 2) - 3) * 4) + 5) * 6) - 7) * 8) + 9) * 10) - 11)
             * 12) + 13) * 14) - 15) * 16) + 17) * 18) - 19) * 20)
    return torch.tensor(float(value)).sin().cos().tanh().exp().log1p().sqrt().neg().abs()
'''

CUSTOM_OPS = '''

@torch.library.custom_op("bench::scale{n}", mutates_args=())
def scale{n}(x: torch.Tensor, k: float) -> torch.Tensor:
    return x * k


@scale{n}.register_fake
def _(x, k):
    return torch.empty_like(x)


def _scale{n}_setup(ctx, inputs, output):
    x, k = inputs
    ctx.k = k


def _scale{n}_backward(ctx, grad):
    return grad * ctx.k


scale{n}.register_autograd(_scale{n}_backward, setup_context=_scale{n}_setup)


@torch.library.custom_op("bench::view{n}", mutates_args=())
def view{n}(x: torch.Tensor, n) -> torch.Tensor:
    return x.view(-1)


@torch.library.custom_op("bench::fill{n}", mutates_args=())
def fill{n}(out: torch.Tensor, value: float) -> None:
    out.fill_(value)


@fill{n}.register_fake
def _(out, value):
    if out.sum() > 0:
        return None


def test_scale{n}():
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    assert gradcheck(scale{n}, (x, 2.0))
'''

ALIASES = '''

class Op{n}(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.exp()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.exp(), None


op_{n} = Op{n}.apply
check_{n} = functools.partial(gradcheck, eps=1e-6, atol=1e-4)
gg_{n} = gradgradcheck
SCALE_{n} = {n} * 0.5


def test_alias_{n}():
    x = torch.randn(3, requires_grad=True)
    assert check_{n}(op_{n}, (x,))
    assert gg_{n}(op_{n}, (x.double(),))
    assert check_{n}(lambda t: op_{n}(t) * SCALE_{n}, x)
'''

# Every classic mistake (one per Function or call: GL001-GL044 but GL006/GL009) with
# non-ASCII names, strings and comments.
MIXED = '''

class Größe{n}(Function):
    """Skalierung — ünïcödé docstring {n}."""

    @staticmethod
    def forward(ctx, 張量, σ: float):
        ctx.σ = σ
        ctx.gespeichert = 張量
        中间 = 張量 * σ
        return 中间

    @staticmethod
    def backward(ctx, grad_ausgabe):
        return grad_ausgabe * ctx.gespeichert, grad_ausgabe.sum()


class Wärme{n}(Function):
    @staticmethod
    def forward(ctx, x, w):
        y = x.exp()
        ctx.save_for_backward(y, w)
        ctx.save_for_backward(y)
        y.add_(1)
        x.mul_(2)
        return y * w

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        y, = ctx.saved_tensors
        einsatz = grad.new_zeros(grad.shape)
        einsatz.index_add_(0, torch.arange(grad.shape[0]), grad)
        return (einsatz if ctx.needs_input_grad[2] else None), grad * y


class Λ{n}(Function):
    @staticmethod
    def forward(x):
        return x.sin()

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, = inputs
        ctx.save_for_backward(x, x.shape)

    @staticmethod
    def backward(ctx, grad):
        x, y, z = ctx.saved_tensors
        return grad * x.cos()


class Ω{n}(Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.mark_dirty(x)
        return x.add_(w).clone()

    @staticmethod
    def backward(ctx, grad):
        grad_x = grad * 2
        grad_w = grad.sum()
        return grad_w, grad_x


@torch.library.custom_op("bench::größe{n}", mutates_args=("ausgabe",))
def größe{n}(x: torch.Tensor, k, *, w: torch.Tensor) -> torch.Tensor:
    x.add_(1)
    return x.view(-1)


@größe{n}.register_fake
def _(x):
    if x.sum() > 0:
        return x.tolist()


def _größe{n}_setup(ctx, inputs, outputs):
    pass


def _größe{n}_backward(ctx, grad):
    x, = ctx.saved_tensors
    return grad


größe{n}.register_autograd(_größe{n}_backward, setup_context=_größe{n}_setup)


def prüfe_{n}():
    α = torch.randn(3, requires_grad=True)
    β = torch.randn(3, dtype=torch.float64)
    γ = torch.empty(3, dtype=torch.float64, requires_grad=True)
    δ = torch.randn(1, dtype=torch.float64, requires_grad=True).expand(4)
    ε = torch.randn(3, dtype=torch.float64, requires_grad=True)
    assert gradcheck(Größe{n}.apply, (α, 2.0))
    assert gradcheck(torch.sin, (β,))
    assert gradcheck(Größe{n}.apply, ε, 2.0)
    assert gradcheck(torch.mul, (ε, ε))
    gradcheck(torch.relu, (γ,), raise_exception=False)
    assert gradcheck(torch.sin, (δ,), check_sparse_nnz=True)
    assert gradgradcheck(Wärme{n}.apply, (ε, ε.detach().requires_grad_()))
    assert gradcheck(Λ{n}.apply, (ε,), check_forward_ad=True)
    assert gradcheck(lambda t: F.dropout(t.float()), (ε,))
    assert gradcheck(lambda t: Λ{n}.apply(t) * torch.rand(3), (ε,))
    Größe{n}()(α, 1.0)
    Λ{n}.forward(None, α)
    einfach = vmap(Größe{n}.apply)(α, 1.0)
    ableitung = jacrev(Λ{n}.apply)(β)
    vorwärts = torch.func.jacfwd(Λ{n}.apply)(β)
    β.grad = None
    (β * 2).sum().backward()
    referenz = β.grad
    (β * 3).sum().backward()
    assert torch.allclose(referenz, β.grad)
    assert torch.allclose(α.grad, α.grad)
    fehler = torch.autograd.gradcheck.GradcheckError
    return einfach, ableitung, vorwärts, fehler  # 完成 {n}
'''

NOTEBOOK_CELL = '''import torch
from torch.autograd import Function, gradcheck

class Cell{n}(Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        return y

    @staticmethod
    def backward(ctx, grad):
        return grad * y, None

x{n} = torch.randn(3, requires_grad=True)
%time ok = gradcheck(Cell{n}.apply, (x{n},))
print(ok)
'''


SPARSE_UNIT = '''

def mache_eingabe_{n}():
    return torch.randn(3, requires_grad=True)


class Quadrat{n}(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return 2 * x * grad


def erzeuge_α_{n}():
    return torch.randn(3, requires_grad=True)


def test_quadrat_{n}():
    x = mache_eingabe_{n}()
    assert gradcheck(Quadrat{n}.apply, (x,))
    y = erzeuge_α_{n}()
    assert gradcheck(Quadrat{n}.apply, (y,))
'''

PLAIN = '''

def größe_{n}_{i}(werte, faktor=2):
    """Plain code: no Function, no gradcheck ({n}, {i})."""
    summe = 0
    for wert in werte:
        summe += wert * faktor
    return summe / max(len(werte), 1)


class Zähler_{n}_{i}:
    def __init__(self):
        self.anzahl = {i}

    def erhöhe(self, schritt=1):
        self.anzahl += schritt
        return self.anzahl
'''


GLOBALS_UNIT = '''

W{n} = torch.randn(4, 4, dtype=torch.float64, requires_grad=True)
B{n} = torch.randn(4, requires_grad=True)
SCALE{n} = {n} + 0.5


def make_input_{n}(rows=3):
    return torch.randn(rows, 4, dtype=torch.float64, requires_grad=True)


def affine_{n}(x):
    return x @ W{n} + B{n} * SCALE{n}


def test_affine_{n}():
    x = make_input_{n}()
    assert gradcheck(affine_{n}, (x,))
    assert gradcheck(torch.mm, (x, W{n}))
    assert gradcheck(torch.add, (B{n}, B{n}))
    assert gradcheck(lambda t: t * SCALE{n}, (W{n},))
'''


def _sparse(n: int) -> str:
    return SPARSE_UNIT.format(n=n) + "".join(PLAIN.format(n=n, i=i) for i in range(12))


def _units(header: str, unit: Callable[[int], str], lines: int, start: int,
           footer: str = "") -> str:
    parts = [header]
    count = header.count("\n") + footer.count("\n")
    n = start
    while count < lines:
        text = unit(n)
        parts.append(text)
        count += text.count("\n")
        n += 1
    parts.append(footer)
    return "".join(parts)


def _template(text: str) -> Callable[[int], str]:
    return lambda n: text.format(n=n, far=n // 2, m=n % 7 + 2)


def notebook(lines: int, start: int = 0) -> str:
    cells = [{"cell_type": "markdown", "metadata": {}, "source": ["# Generated notebook\n"]}]
    count, n = 0, start
    while count < lines:
        source = NOTEBOOK_CELL.format(n=n)
        cells.append({"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                      "source": source.splitlines(keepends=True)})
        if n % 4 == 0:
            cells.append({"cell_type": "markdown", "metadata": {}, "source": [f"## Part {n}\n"]})
        count += source.count("\n")
        n += 1
    data = {"cells": cells, "nbformat": 4, "nbformat_minor": 5,
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                        "language": "python"},
                         "language_info": {"name": "python"}}}
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def _header(shape: str) -> str:
    return HEADER.format(shape=shape)


SHAPES: dict[str, Callable[[int, int], str]] = {
    "autograd": lambda lines, start: _units(AUTOGRAD_HEADER, lambda n: AUTOGRAD_UNIT.format(
        n=n, m=n % 7 + 2), lines, start),
    "saves_nothing": lambda lines, start: _units(_header("saves_nothing"), _template(SAVES_NOTHING),
                                                 lines, start),
    "subclasses": lambda lines, start: _units(_header("subclasses"), _template(SUBCLASSES), lines,
                                              start),
    "gradchecks": gradchecks,
    "long_class": lambda lines, start: _units(_header("long_class") + LONG_CLASS_HEADER,
                                              _template(LONG_CLASS_UNIT), lines, start),
    "deep_nesting": lambda lines, start: _units(_header("deep_nesting"), _template(DEEP_UNIT),
                                                lines, start),
    "custom_ops": lambda lines, start: _units(_header("custom_ops"), _template(CUSTOM_OPS), lines,
                                              start),
    "aliases": lambda lines, start: _units(_header("aliases"), _template(ALIASES), lines, start),
    "mixed": lambda lines, start: _units(_header("mixed"), _template(MIXED), lines, start),
    "notebook": notebook,
    "globals": lambda lines, start: _units(_header("globals"), _template(GLOBALS_UNIT), lines, start),
    "sparse": lambda lines, start: _units(_header("sparse"), _sparse, lines, start),
}


def suffix(shape: str) -> str:
    return ".ipynb" if shape == "notebook" else ".py"


def generate(shape: str, lines: int, start: int = 0) -> str:
    """About ``lines`` lines of ``shape`` (of code cells, for the notebook)."""
    return SHAPES[shape](lines, start)


if __name__ == "__main__":
    sys.stdout.write(generate(sys.argv[1], int(sys.argv[2])))
