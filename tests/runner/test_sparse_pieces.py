"""Functions that take a sparse matrix in pieces (fixtures/pieces_pkg/): values, int64 rows and
columns inside a square shape, drawn together (``inputs/coo.py``); a method string named only by a
backend forward imports in its body (``from .backend import solve``: its literals and defaults);
a `device` parameter. Each is run for real in the worker."""
import pytest

from _runner_util import run_class

pytestmark = pytest.mark.asyncio(loop_scope="module")

FILE = "pieces_pkg/ops.py"


def by_name(result):
    return dict((i["name"], i) for i in result["inputs"])


async def test_a_solve_on_a_matrix_in_pieces_is_proved_in_each_method_its_backend_names(client):
    r = await run_class(client, FILE, "PiecesSolve")
    assert r["status"] == "pass", r["summary"]
    inputs = by_name(r)
    assert inputs["row"]["dtype"] == inputs["col"]["dtype"] == "int64", inputs
    assert inputs["val"]["shape"] == inputs["row"]["shape"] == inputs["col"]["shape"], inputs
    assert inputs["val"].get("requires_grad") and not inputs["row"].get("requires_grad"), inputs
    assert [m["mode"] for m in r["modes"][1:]] == [{"method": "'jacobi'"}], r["modes"]
    assert "maxiter" in inputs and inputs["maxiter"]["kind"] != "tensor", inputs


async def test_a_wrong_sign_on_a_matrix_in_pieces_fails(client):
    r = await run_class(client, FILE, "PiecesSolveWrongSign")
    assert r["status"] == "fail", r["summary"]
    assert "for val" in r["summary"], r["summary"]


async def test_two_matrices_in_pieces_named_by_suffixes(client):
    r = await run_class(client, FILE, "PiecesProduct")
    # first order proved; second order is a true ⚠ (backward reads the dense copies forward saved)
    assert r["status"] == "warning" and r["summary"].startswith("⚠ first-order gradients match"), r["summary"]
    assert {"val_a", "val_b"} <= set(r["proof"]["inputs"]), r["proof"]
    r = await run_class(client, FILE, "PiecesProductDropsB")
    assert r["status"] == "fail", r["summary"]
    assert "val_b" in r["summary"], r["summary"]


async def test_a_determinant_of_a_square_matrix_in_pieces_on_a_device(client):
    r = await run_class(client, FILE, "PiecesDet")
    assert r["status"] in ("pass", "warning"), r["summary"]
    inputs = by_name(r)
    n = int(inputs["shape"]["repr"].strip("()").split(",")[0])
    assert inputs["shape"]["repr"] == "(%d, %d)" % (n, n), inputs
    assert inputs["device"]["repr"] == "device(type='cpu')", inputs


async def test_a_batch_of_matrices_in_pieces(client):
    r = await run_class(client, FILE, "BatchSolve")
    # first order proved; second order a true ⚠ (backward reads the dense matrices forward saved)
    assert r["status"] == "warning" and r["summary"].startswith("⚠ first-order gradients match"), r["summary"]
    inputs = by_name(r)
    assert len(inputs["val_batch"]["shape"]) == 2 and inputs["val_batch"]["shape"][1] == inputs["row"]["shape"][0], inputs


async def test_a_shape_forward_never_returns_on_is_passed_over(client):
    r = await run_class(client, "slow_shapes.py", "StuckOnMatrices")
    assert r["status"] == "pass", r["summary"]
    assert len(by_name(r)["x"]["shape"]) != 2, r["inputs"]
