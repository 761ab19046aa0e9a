"""`options.compile`: eager gradients against torch.compile and torch.func, run for real in a
worker (torch 2.13, CPU). Most runs use the aot_eager backend only; inductor runs in one
slow-marked test."""
import pytest

from _runner_util import assert_valid, check, fn_class, func, method_line, req

from gradlint.runner.report import render_markdown, render_text
from gradlint.runner.report_checks import passed_lines
from gradlint.runner.result import RunResult
from gradlint.worker.compiled import cxx_compiler

pytestmark = pytest.mark.asyncio(loop_scope="module")
AOT = {"compile": ["aot_eager"], "draws": 1}


async def run(client, request):
    return assert_valid(await client.run(request, timeout=300))


def target(qualname, options=AOT):
    return fn_class("compile_targets.py", qualname, options=options)


async def test_a_straight_through_backward_that_compiled_func_grad_drops_fails_the_run(client):
    r = await run(client, target("StraightThroughRound"))
    assert (r["status"], r["verdict"]) == ("fail", "compile_mismatch"), r["summary"]
    assert r["failed_check"] == "compile func.grad (aot_eager)"
    bad = check(r, "compile func.grad (aot_eager)")
    assert bad["details"]["pattern"]["kind"] == "backward_dropped"
    assert "your custom backward is not used" in r["summary"]
    assert "@torch._dynamo.disable" in r["message"]
    assert r["location"]["line"] == method_line("compile_targets.py", "StraightThroughRound", "backward")
    # differentiating the compiled function with autograd keeps the backward (torch 2.13)
    assert check(r, "compile (aot_eager)")["status"] == "pass"
    assert check(r, "func.grad")["status"] == "pass"  # eager torch.func keeps it too
    # on its own, gradcheck can only call a straight-through estimator inconclusive
    assert check(r, "gradcheck")["verdict"] == "surrogate_gradient"
    assert any(n.startswith("the gradient checks alone: inconclusive") for n in r["notes"])
    # the text report lists each comparison, with its time and what it found
    text = render_text(RunResult.from_json(r), "StraightThroughRound").splitlines()
    assert any(line.startswith("    torch.compile and torch.func (aot_eager): 4 of 4 comparisons ran, ")
               for line in text), text
    [dropped] = [line for line in text if line.strip().startswith("✗ compile func.grad (aot_eager)")]
    assert dropped.endswith("compiled gradients equal autograd through forward: your custom backward is not used")
    assert any(line.strip().startswith("✓ compile (aot_eager)") for line in text)
    markdown = render_markdown(RunResult.from_json(r), "StraightThroughRound")
    assert "| comparison | result | compiling |" in markdown
    assert "| compile func.grad (aot_eager) | ✗ max \\|Δ\\| " in markdown


async def test_a_surrogate_spike_whose_forward_autograd_cannot_see_is_dropped_too(client):
    r = await run(client, target("SurrogateSpike"))
    assert r["verdict"] == "compile_mismatch", r["summary"]
    assert check(r, "compile func.grad (aot_eager)")["details"]["pattern"]["kind"] == "backward_dropped"


async def test_a_correct_setup_context_function_passes_with_the_compile_checks_that_ran(client):
    r = await run(client, target("Sin"))
    assert (r["status"], r["verdict"]) == ("pass", "ok"), r["summary"]
    for name in ("func.grad", "compile (aot_eager)", "compile func.grad (aot_eager)", "compile func.vjp (aot_eager)"):
        rec = check(r, name)
        assert rec["status"] == "pass", (name, rec["message"])
        assert rec["details"]["max_difference"] <= rec["details"]["tolerance"]
    assert check(r, "compile (aot_eager)")["details"]["compile_seconds"] > 0
    assert r["timings"]["compile_s"] > 0
    assert "compiled ×3 (aot_eager)" in r["summary"]
    # `gradlint run` prints one line under a ✓: which comparisons it covers
    [line] = passed_lines(RunResult.from_json(r))
    assert line.startswith("    compile: 4 comparisons agree with eager (func.grad, compile (aot_eager), "
                           "compile func.grad (aot_eager), compile func.vjp (aot_eager)); "), line


async def test_a_wrong_backward_is_reported_as_the_gradient_failure_first(client):
    r = await run(client, target("WrongSin"))
    assert (r["status"], r["verdict"], r["failed_check"]) == ("fail", "wrong_gradient", "gradcheck")
    assert "2 × numerical" in r["summary"]
    # the compile check still ran: compiled func.grad silently used the true derivative
    assert check(r, "compile func.grad (aot_eager)")["verdict"] == "compile_mismatch"
    assert any(n.startswith("also: torch.compile(torch.func.grad(f))") for n in r["notes"])


async def test_an_old_style_function_is_compiled_but_not_given_to_torch_func(client):
    r = await run(client, target("OldStyleSquare"))
    assert r["status"] == "pass", r["summary"]
    assert check(r, "compile (aot_eager)")["status"] == "pass"
    for name in ("func.grad", "compile func.grad (aot_eager)"):
        assert check(r, name)["status"] == "skipped"
        assert "no setup_context" in check(r, name)["message"]


async def test_the_same_tensor_twice_is_a_graph_break_warning(client):
    r = await run(client, func("compile_targets.py", "square_by_mul", options=AOT))
    assert (r["status"], r["verdict"]) == ("warning", "compile_unsupported"), r["summary"]
    rec = check(r, "compile (aot_eager)")
    assert "duplicate tensor input" in rec["details"]["reason"]
    assert rec["details"]["max_difference"] <= rec["details"]["tolerance"]  # eager fallback: right gradients
    text = render_text(RunResult.from_json(r), "square_by_mul")
    assert "⚠ compile (aot_eager)" in text and "graph break: " in text


async def test_strict_makes_a_graph_break_fail(client):
    r = await run(client, func("compile_targets.py", "square_by_mul", options=dict(AOT, strict=True)))
    assert (r["status"], r["verdict"]) == ("fail", "compile_unsupported")


async def test_compiled_jacrev_is_compared_for_functions_declaring_a_vmap_rule(client):
    r = await run(client, target("VmapStraightThrough"))
    assert r["verdict"] == "compile_mismatch"
    assert check(r, "compile jacrev (aot_eager)")["verdict"] == "compile_mismatch"
    assert check(r, "vmap")["status"] == "pass" and check(r, "jacrev")["status"] == "pass"


async def test_a_custom_op_is_compiled_and_torch_func_is_skipped_with_the_reason(client):
    r = await run(client, req("compile_targets.py", {"kind": "custom_op", "qualname": "cube"}, options=AOT))
    assert r["status"] == "pass", r["summary"]
    assert check(r, "compile (aot_eager)")["status"] == "pass"
    assert "custom ops" in check(r, "compile func.grad (aot_eager)")["message"]


async def test_a_plain_run_has_no_compile_checks(client):
    r = await run(client, target("StraightThroughRound", options={"draws": 1}))
    assert r["status"] == "inconclusive"
    assert not [c for c in r["checks"] if c["name"].startswith(("compile", "func."))]
    assert "compile_s" not in r["timings"]


async def test_bad_compile_option_is_a_bad_request(client):
    r = await run(client, target("Sin", options={"compile": ["tvm"]}))
    assert (r["status"], r["verdict"]) == ("error", "bad_request")


@pytest.mark.slow
@pytest.mark.skipif(cxx_compiler() is None, reason="inductor needs a C++ compiler")
async def test_inductor_drops_the_straight_through_backward_too(client):
    r = await run(client, target("StraightThroughRound", options={"compile": ["inductor"], "draws": 1}))
    assert r["verdict"] == "compile_mismatch"
    assert check(r, "compile (inductor)")["status"] == "pass"
    rec = check(r, "compile func.grad (inductor)")
    assert rec["details"]["pattern"]["kind"] == "backward_dropped"
    assert rec["details"]["backend"] == "inductor"
