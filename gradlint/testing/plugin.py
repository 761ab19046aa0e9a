"""The pytest plugin (entry point ``pytest11``: ``gradlint``). Opt-in:

    pytest --gradlint src/

collects every autograd Function, torch.library custom op and declared function under
``src/`` as a test item (``src/pkg/ops.py::MyReLU``) that runs the runner's checks on it, in-process, with the
inputs ``gradlint run`` would use (a gradcheck call in the project's tests, a
declaration, or synthesized). A failure prints the runner's report; a run that cannot
decide (no inputs) is skipped with the reason.

Options, weakest first: the ``gradlint_options`` ini lines (``NAME=VALUE``), then
``@pytest.mark.gradlint(eps=…, atol=…, checks=[…])`` markers (outermost first), as the
``gradlint_options`` fixture returns them; override that fixture in a conftest.py to tune
a directory (it may request itself to extend the defaults). The ``--gradlint`` items also
take the checks ``[tool.gradlint.run]`` asks for in the project's pyproject.toml (compile,
dtype, precision-factor), under all of those (``compile=false`` in a marker turns it off).

When pytest is pointed at the tests only (``testpaths = ["tests"]``, or no arguments), the
project's packages the tests import are checked too (gradlint/testing/discovery.py), and the
summary says what was checked, or that nothing was and how to point it (under xdist, the
workers collect and send it to the controller, which prints it once).

Without ``--gradlint`` this module only registers the option, the marker and the
fixture: it imports neither torch nor libcst.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

_WORKER_OUTPUT = "gradlint"  # the key of a worker's collection in xdist's workeroutput
_FROM_WORKERS = pytest.StashKey[list]()  # the controller's: what each finished worker collected


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gradlint", "gradient checks (gradlint)")
    group.addoption("--gradlint", action="store_true", default=False,
                    help="also collect every autograd Function, custom op and declared function in "
                         "the given paths and check its gradients (runs their code)")
    group.addoption("--gradlint-no-cache", action="store_true", default=False,
                    help="neither read nor write cached results of gradient checks (.gradlint_cache/)")
    parser.addini("gradlint_options", type="linelist", default=[],
                  help="gradient check options, one NAME=VALUE per line (eps=1e-6, atol=1e-4, "
                       "checks=gradcheck,gradgradcheck, …)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "gradlint(**options): options for gradient checks in this test: eps, atol, rtol, "
                   "checks=[...], fast_mode, seed, … (see the gradlint_options fixture)")


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector):
    """After the session collected what pytest was pointed at: the project's packages the
    tests import (only when the arguments came from ``testpaths`` or the directory)."""
    report = yield
    if isinstance(collector, pytest.Session) and collector.config.getoption("gradlint") and report.passed:
        from .collect import package_files

        report.result.extend(package_files(collector))
    return report


def pytest_collection_finish(session: pytest.Session) -> None:
    """An xdist worker sends what it collected to the controller, which prints the summary."""
    config = session.config
    if config.getoption("gradlint") and hasattr(config, "workeroutput"):
        from .collect import checked

        collected = checked(config)
        if collected is not None:
            config.workeroutput[_WORKER_OUTPUT] = collected.to_json()  # type: ignore[attr-defined]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    """xdist's controller: a worker finished; keep what it collected (all collect the same)."""
    data = (getattr(node, "workeroutput", None) or {}).get(_WORKER_OUTPUT)
    if data is not None:
        node.config.stash.setdefault(_FROM_WORKERS, []).append(data)


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    if not config.getoption("gradlint"):
        return
    from .collect import Checked, checked

    collected = checked(config)
    if collected is None and config.stash.get(_FROM_WORKERS, None):
        collected = Checked.from_json(config.stash[_FROM_WORKERS][0])
    lines = collected.lines() if collected is not None else []
    if lines:
        terminalreporter.section("gradlint")
        for line in lines:
            terminalreporter.write_line(line)


def pytest_collect_file(file_path, parent):
    if file_path.suffix != ".py" or not parent.config.getoption("gradlint"):
        return None
    from .collect import GradlintFile

    return GradlintFile.from_parent(parent, path=file_path)


@pytest.fixture
def gradlint_options(request: pytest.FixtureRequest) -> dict[str, Any]:
    """Options for gradient checks here: ini ``gradlint_options``, then the ``gradlint``
    markers (closest last). Pass them on: ``assert_gradients(f, x, **gradlint_options)``."""
    options = ini_options(request.config)
    for mark in reversed(list(request.node.iter_markers("gradlint"))):
        if mark.args:
            raise pytest.UsageError(f"@pytest.mark.gradlint takes keyword options only, not {mark.args!r}")
        options.update(mark.kwargs)
    return options


def ini_options(config: pytest.Config) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for line in config.getini("gradlint_options"):
        name, sep, raw = line.partition("=")
        name = name.strip()
        if not sep or not name:
            raise pytest.UsageError(f"gradlint_options: expected NAME=VALUE, not {line!r}")
        raw = raw.strip()
        if name == "checks":
            options[name] = [part.strip() for part in raw.split(",") if part.strip()]
            continue
        try:
            options[name] = json.loads(raw)
        except ValueError:
            options[name] = raw
    return options
