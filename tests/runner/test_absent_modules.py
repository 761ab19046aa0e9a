"""A test module that imports a library this interpreter does not have still gives inputs
(fixtures/absent_proj/): the absent module is stood in for while the tests run (``inputs/absent.py``).

The Functions there take a callable and ``*params``: nothing can be synthesized for them, and
their only callers are tests that import a plotting library and a progress bar that are not
installed. A stand-in cannot become an input: a test that builds its inputs from an absent
module gives none.
"""
import sys

import pytest

from _runner_util import run_class

ASYNC = pytest.mark.asyncio(loop_scope="module")

FILE = "absent_proj/integrate.py"


def captured_from(result):
    return next(n for n in result["notes"] if n.startswith("inputs captured from "))


@ASYNC
async def test_a_test_importing_an_absent_library_gives_inputs(client):
    r = await run_class(client, FILE, "Integrate")
    # first order proved (its backward detaches its adjoint: not twice differentiable, a ⚠)
    assert r["status"] == "warning" and r["summary"].startswith("⚠ first-order gradients match"), r["summary"]
    assert [i.get("shape") for i in r["inputs"] if i.get("shape") is not None] == [[3], [], []], r["inputs"]
    note = captured_from(r)
    assert ("test_integrate.py:13 (test_integrates) (gradlint_fixture_absent_plotting, "
            "gradlint_fixture_absent_progress, gradlint_fixture_absent_tables stood in for: not installed here)"
            in note), note


@ASYNC
async def test_a_wrong_adjoint_of_the_params_is_caught_on_those_inputs(client):
    r = await run_class(client, FILE, "IntegrateWrongParams")
    assert r["status"] == "fail", r["summary"]
    assert "params" in r["summary"], r["summary"]


@ASYNC
async def test_inputs_built_from_an_absent_library_are_no_inputs(client):
    r = await run_class(client, FILE, "Tabulated")
    assert r["status"] == "no_inputs", r["summary"]


def test_the_stand_ins_are_taken_back(tmp_path):
    # the worker's own modules: importable here (stdlib + torch)
    from gradlint.worker.inputs import absent

    (tmp_path / "test_x.py").write_text("import gradlint_fixture_nowhere.sub as s\nVALUE = s.thing(3).other\n")
    with absent.standing_in() as stand:
        try:
            import gradlint_fixture_nowhere  # noqa: F401
        except ModuleNotFoundError as e:
            top = absent.absent(e, [str(tmp_path)], stand.names)
        assert top == "gradlint_fixture_nowhere"
        stand.add(top)
        import gradlint_fixture_nowhere.sub as sub
        assert absent.stood_in(sub.thing(3).other) == "gradlint_fixture_nowhere"
        with pytest.raises(TypeError):
            sub.thing + 1
    assert "gradlint_fixture_nowhere" not in sys.modules and "gradlint_fixture_nowhere.sub" not in sys.modules
    with pytest.raises(ModuleNotFoundError):
        import gradlint_fixture_nowhere  # noqa: F401,F811


def test_a_module_of_the_project_or_an_installed_one_is_never_stood_in_for(tmp_path):
    from gradlint.worker.inputs import absent

    (tmp_path / "helpers.py").write_text("")
    assert absent.absent(ModuleNotFoundError("x", name="helpers"), [str(tmp_path)], []) is None
    assert absent.absent(ModuleNotFoundError("x", name="json.nothing"), [str(tmp_path)], []) is None
    assert absent.absent(ImportError("x", name="gradlint_fixture_nowhere"), [str(tmp_path)], []) is None
    assert absent.absent(ModuleNotFoundError("x", name="gradlint_fixture_nowhere"), [str(tmp_path)],
                         ["a", "b", "c", "d"]) is None


def test_a_stand_in_is_for_the_module_that_needed_it_only(tmp_path):
    from gradlint.worker.inputs import test_callers

    (tmp_path / "test_plots.py").write_text("import gradlint_fixture_nowhere_plot as plt\nFIG = plt.figure()\n")
    (tmp_path / "test_optional.py").write_text(
        "try:\n    import gradlint_fixture_nowhere_plot\n    HAS_PLOT = True\n"
        "except ImportError:\n    HAS_PLOT = False\n")
    plots = test_callers.import_standing_in(str(tmp_path / "test_plots.py"), str(tmp_path))
    assert plots.__gradlint_stand_ins__ == ["gradlint_fixture_nowhere_plot"]
    optional = test_callers.import_standing_in(str(tmp_path / "test_optional.py"), str(tmp_path))
    assert optional.HAS_PLOT is False and not hasattr(optional, "__gradlint_stand_ins__")
