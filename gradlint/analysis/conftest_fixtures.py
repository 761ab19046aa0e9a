"""The pytest fixtures of the ``conftest.py`` files above a module: what a test's fixture
parameter holds when the module itself does not define the fixture."""

from __future__ import annotations

from typing import Sequence

import libcst as cst

from .fact_types import UNKNOWN, Fact
from .facts import Evaluator
from .scopes import ModuleContext


class FixtureSource:
    """The fixtures of the ``conftest.py`` files above a module, nearest first."""

    def __init__(self, modules: Sequence[cst.Module], default_dtype: str | None):
        self.evaluators: list[Evaluator] = []
        for module in modules:
            context = ModuleContext(module.body)
            context.default_dtype = default_dtype
            self.evaluators.append(Evaluator(context))

    def value(self, name: str, depth: int) -> "Fact":
        for evaluator in self.evaluators:
            found = evaluator.callees.module_fixtures().get(name)
            if found is not None:
                node, site = found
                return evaluator.callees.value_of(node, site, {}, depth, yields=True)
        return UNKNOWN
