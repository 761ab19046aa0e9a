"""What a run reports: real gradchecks in a real worker, one warm worker for the module."""
import os

import pytest

from _runner_util import (
    assert_valid,
    call_site,
    check,
    fixture,
    fn_class,
    func,
    marker_line,
    method_line,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

CPLX = "(torch.tensor([0.5+0.7j, -1.3+0.4j, 0.6-1.4j], dtype=torch.complex128, requires_grad=True),)"
MM = ("(torch.randn(3, 4, dtype=torch.float64, requires_grad=True), "
      "torch.randn(4, 2, dtype=torch.float64, requires_grad=True))")


async def run(client, request, **kw):
    return assert_valid(await client.run(request, timeout=60, **kw))


# --- correct Functions pass ------------------------------------------------------


@pytest.mark.parametrize(
    "qualname, inputs",
    [
        ("MyReLU", None),
        ("Softmax", None),
        ("MatMul", {"kind": "expression", "source": MM}),
        ("SinCos", None),
        ("ExpSetupContext", None),
        ("ComplexSquare", {"kind": "expression", "source": CPLX}),
        ("LeakyScale", None),
    ],
)
async def test_correct_functions_pass(client, qualname, inputs):
    r = await run(client, fn_class("good_functions.py", qualname, inputs=inputs))
    assert r["status"] == "pass", r["summary"] + "\n" + str(r["checks"])
    assert r["verdict"] == "ok"
    assert r["summary"].startswith("✓ gradients match")
    assert check(r, "gradcheck")["status"] == "pass"
    assert check(r, "gradgradcheck")["status"] == "pass"
    assert r["target"]["function_class"] == qualname
    assert r["environment"]["torch"].startswith("2.")


async def test_setup_context_function_runs_forward_ad_check(client):
    r = await run(client, fn_class("good_functions.py", "ExpSetupContext"))
    assert r["status"] == "pass"
    assert check(r, "forward_ad")["status"] == "pass"
    assert [i["name"] for i in r["inputs"]] == ["x"]  # no ctx in setup_context style


async def test_two_outputs_are_reported(client):
    r = await run(client, fn_class("good_functions.py", "SinCos"))
    assert [o["index"] for o in r["outputs"]] == [0, 1]
    assert all(o["requires_grad"] for o in r["outputs"])


async def test_default_non_tensor_parameter_is_passed(client):
    r = await run(client, fn_class("good_functions.py", "LeakyScale"))
    assert r["status"] == "pass"
    assert r["inputs"][1] == {"index": 1, "name": "slope", "kind": "value", "repr": "0.5", "type": "float",
                              "source": "synthesized"}


# --- wrong gradients ----------------------------------------------------------------


async def test_backward_off_by_constant_factor(client):
    r = await run(client, fn_class("bad_functions.py", "ScaleWrong"))
    assert (r["status"], r["verdict"]) == ("fail", "wrong_gradient")
    assert r["failed_check"] == "gradcheck"
    # the pattern comes first: backward forgot the factor 2
    assert r["summary"].startswith("✗ Jacobian mismatch for x, output 0: analytical = 0.5 × numerical "
                                   "(a constant factor) (worst |Δ| "), r["summary"]
    d = check(r, "gradcheck")["details"]
    assert d["pattern"]["kind"] == "scale" and d["pattern"]["factor"] == pytest.approx(0.5)
    assert d["input"] == "x" and d["output"] == 0
    n = 1
    for size in r["inputs"][0]["shape"]:
        n *= size
    assert d["failing_elements"] == n and d["total_elements"] == n * n  # elementwise: the diagonal
    worst = d["worst"]
    assert 1 <= len(worst) <= 5
    w = worst[0]
    assert w["input_index"] == w["output_index"]  # elementwise: diagonal entries
    assert w["numerical"] == pytest.approx(2 * w["analytical"], rel=1e-6)
    assert w["abs_error"] == pytest.approx(abs(w["analytical"]), rel=1e-6)
    assert w["rel_error"] == pytest.approx(0.5, rel=1e-6)
    assert w["kink"] is False
    assert worst == sorted(worst, key=lambda e: -e["abs_error"])
    # points at the backward
    assert r["location"]["line"] == method_line("bad_functions.py", "ScaleWrong", "backward")
    assert r["location"]["file"] == fixture("bad_functions.py")
    assert check(r, "gradgradcheck")["status"] == "skipped"


async def test_swapped_input_gradients(client):
    r = await run(client, fn_class("bad_functions.py", "SwappedMul"))
    assert (r["status"], r["verdict"]) == ("fail", "wrong_gradient")
    d = check(r, "gradcheck")["details"]
    assert d["input"] == "a"
    assert {p["input"] for p in d["failing_pairs"]} == {"a", "b"}
    assert d["pattern"]["kind"] == "swap" and d["pattern"]["inputs"] == ["a", "b"]
    assert "the gradients of a and b are swapped" in r["summary"]
    a, b = (next(i for i in r["inputs"] if i["name"] == n) for n in "ab")
    assert a["shape"] == b["shape"] == [3, 4]  # 2-D, unequal sizes


async def test_missing_conj_in_complex_backward(client):
    r = await run(client, fn_class("bad_functions.py", "ComplexSquareNoConj",
                                   inputs={"kind": "expression", "source": CPLX}))
    assert (r["status"], r["verdict"]) == ("fail", "wrong_gradient")
    w = check(r, "gradcheck")["details"]["worst"][0]
    assert w["input_part"] in ("real", "imag") and w["output_part"] in ("real", "imag")
    assert r["inputs"][0]["dtype"] == "complex128"


async def test_wrong_jvp_fails_forward_mode_check(client):
    r = await run(client, fn_class("bad_functions.py", "WrongJvp"))
    assert (r["status"], r["verdict"]) == ("fail", "wrong_gradient")
    assert r["failed_check"] == "forward_ad"
    assert check(r, "gradcheck")["status"] == "pass"
    w = check(r, "forward_ad")["details"]["worst"][0]
    assert (w["numerical"], w["analytical"]) == (pytest.approx(3.0), pytest.approx(2.0))
    assert r["location"]["line"] == method_line("bad_functions.py", "WrongJvp", "jvp")


# --- second order --------------------------------------------------------------------


async def test_once_differentiable_skips_gradgradcheck(client):
    r = await run(client, fn_class("bad_functions.py", "CubeOnce"))
    assert (r["status"], r["verdict"]) == ("pass", "ok")
    gg = check(r, "gradgradcheck")
    assert gg["status"] == "skipped" and gg["verdict"] == "not_twice_differentiable"
    assert any("once_differentiable" in n for n in r["notes"])


async def test_once_differentiable_under_gradgradcheck_call(client):
    r = await run(client, call_site("calls_in_tests.py", "once", enclosing="test_once"))
    assert (r["status"], r["verdict"]) == ("fail", "not_twice_differentiable")
    assert r["target"]["variant"] == "gradgradcheck"
    assert "once_differentiable" in r["summary"]
    assert check(r, "gradcheck")["status"] == "pass"


async def test_detach_in_backward_is_not_twice_differentiable(client):
    # first-order gradients are right: second order is a warning, not a failure...
    r = await run(client, fn_class("bad_functions.py", "CubeDetached"))
    assert (r["status"], r["verdict"]) == ("warning", "not_twice_differentiable")
    assert r["summary"].startswith("⚠ first-order gradients match; gradgradcheck fails: not twice differentiable")
    assert r["failed_check"] == "gradgradcheck" and check(r, "gradcheck")["status"] == "pass"
    d = check(r, "gradgradcheck")["details"]
    assert d["analytical_all_zero"] is True and d["input"] == "x"
    assert r["location"]["line"] == method_line("bad_functions.py", "CubeDetached", "backward")
    # ...unless asked for
    strict = await run(client, fn_class("bad_functions.py", "CubeDetached", options={"strict": True}))
    assert (strict["status"], strict["verdict"]) == ("fail", "not_twice_differentiable")


# --- inputs that make gradcheck meaningless ------------------------------------


async def test_relu_at_zero_is_a_non_differentiable_point(client):
    r = await run(client, call_site("callsite_module.py", "relu0"))
    assert (r["status"], r["verdict"]) == ("fail", "non_differentiable_point")
    w = check(r, "gradcheck")["details"]["worst"][0]
    assert w["input_index"] == [0] and w["input_value"] == 0.0
    assert w["kink"] is True
    assert (w["left_slope"], w["right_slope"]) == (pytest.approx(0.0), pytest.approx(1.0))
    assert w["numerical"] == pytest.approx(0.5) and w["analytical"] == 0.0
    assert r["inputs"][0]["source"] == "call_site"
    assert r["inputs"][0]["preview"] == "[0, 1, -1]"
    assert r["location"]["line"] == marker_line("callsite_module.py", "relu0")
    assert "kink" in r["summary"]


async def test_dropout_in_forward_is_checked_with_its_random_numbers_fixed(client):
    # a sampler (here: a dropout mask saved for backward) cannot be gradchecked as is; with the
    # RNG reseeded before every call its pathwise gradient can, and here it is right
    r = await run(client, fn_class("bad_functions.py", "DropoutScale"))
    assert r["status"] == "pass", r["summary"]
    random = check(r, "random_op")
    assert random["status"] == "pass" and random["details"]["reseeded"] is True
    assert "forward is random" in random["message"]
    assert check(r, "gradcheck (draw 2)")["status"] == "pass"


async def test_forward_mutating_its_input(client):
    r = await run(client, fn_class("bad_functions.py", "InPlaceDouble"))
    assert (r["status"], r["verdict"]) == ("fail", "input_mutated")
    assert check(r, "input_mutation")["details"]["changed"][0]["input"] == "x"


async def test_nondeterministic_backward(client):
    r = await run(client, fn_class("bad_functions.py", "NoisyBackward"))
    assert (r["status"], r["verdict"]) == ("fail", "nondeterministic_backward")
    assert "nondet_tol" in r["message"]


async def test_nondeterminism_within_nondet_tol_passes_that_check(client):
    r = await run(client, fn_class("bad_functions.py", "NoisyBackward",
                                   options={"nondet_tol": 1.0, "atol": 1e-2, "gradgradcheck": False}))
    assert check(r, "nondeterminism")["status"] == "pass"


async def test_backward_returning_too_few_gradients(client):
    r = await run(client, fn_class("bad_functions.py", "TooFewGrads"))
    assert (r["status"], r["verdict"]) == ("error", "exception")
    assert r["summary"] == ("✗ RuntimeError in backward: function TooFewGradsBackward returned an incorrect "
                            "number of gradients (expected 2, got 1)")
    assert r["exception"]["type"] == "RuntimeError"
    assert r["location"]["line"] == method_line("bad_functions.py", "TooFewGrads", "backward")


async def test_options_reach_torch(client):
    r = await run(client, fn_class("bad_functions.py", "ScaleWrong", options={"atol": 10.0, "rtol": 10.0}))
    assert r["status"] == "pass"
    assert r["options"]["atol"] == 10.0


# --- call sites -------------------------------------------------------------------


async def test_call_site_in_test_function(client):
    r = await run(client, call_site("calls_in_tests.py", "scale", enclosing="test_scale"))
    assert (r["status"], r["verdict"]) == ("fail", "wrong_gradient")
    assert r["target"]["variant"] == "gradcheck"
    assert r["target"]["function_class"] == "ScaleWrong"
    x = r["inputs"][0]
    assert (x["name"], x["source"], x["preview"], x["promoted_from"]) == ("x", "call_site", "[1, 2, 3]", None)
    worst = check(r, "gradcheck")["details"]["worst"]
    assert worst[0]["input_index"] == [2] and worst[0]["abs_error"] == pytest.approx(3.0)


async def test_call_site_in_unittest_method(client):
    r = await run(client, call_site("calls_in_tests.py", "mm", enclosing="TestOps.test_mm"))
    assert (r["status"], r["verdict"]) == ("pass", "ok"), r["summary"]
    assert [i["name"] for i in r["inputs"]] == ["a", "b"]
    assert [i["shape"] for i in r["inputs"]] == [[3, 4], [4, 2]]


async def test_call_site_in_plain_class_method_keeps_its_options(client):
    r = await run(client, call_site("calls_in_tests.py", "plain", enclosing="TestPlain.test_relu"))
    assert r["status"] == "pass", r["summary"]
    assert r["options"]["eps"] == 1e-6 and r["options"]["atol"] == 1e-5


async def test_module_level_multiline_call(client):
    r = await run(client, call_site("callsite_module.py", "relu-ok"))
    assert r["status"] == "pass", r["summary"]
    assert r["inputs"][0]["preview"] == "[0.5, 1.5, -0.7]"


async def test_call_site_needing_parameters(client):
    r = await run(client, call_site("calls_in_tests.py", "param", enclosing="test_param"))
    assert r["status"] == "no_inputs"
    assert r["summary"] == ("cannot call `test_param(x)`: it takes parameters that are not parametrize cases "
                            "or fixtures of this module; declare inputs with `# gradlint: inputs=...`")


async def test_call_site_under_main_guard_is_not_reached(client):
    r = await run(client, call_site("callsite_module.py", "main"))
    assert r["status"] == "no_inputs"
    assert "__main__" in r["summary"]


async def test_call_site_not_reached_in_function(client):
    r = await run(client, call_site("calls_in_tests.py", "unreached", enclosing="test_not_reached"))
    assert r["status"] == "no_inputs"
    assert "was not reached" in r["summary"]


async def test_float32_call_site_is_low_precision(client):
    r = await run(client, call_site("calls_in_tests.py", "float32", enclosing="test_float32"))
    assert (r["status"], r["verdict"]) == ("fail", "low_precision_input"), r["summary"]
    assert r["summary"] == "✗ gradients are right in float64; your float32 inputs make gradcheck fail"
    x = r["inputs"][0]
    assert (x["dtype"], x["promoted_from"]) == ("float64", "float32")
    assert check(r, "gradcheck")["status"] == "pass"
    assert check(r, "as_written")["status"] == "fail"


async def test_declared_inputs_replace_call_site_inputs(client):
    r = await run(client, call_site("calls_in_tests.py", "scale", enclosing="test_scale",
                                    inputs={"kind": "expression", "source": "torch.ones(2, dtype=torch.float64, requires_grad=True)"}))
    assert r["status"] == "fail"
    assert r["inputs"][0]["source"] == "expression" and r["inputs"][0]["shape"] == [2]


# --- inputs ---------------------------------------------------------------------


async def test_declared_expression_inputs(client):
    r = await run(client, fn_class("good_functions.py", "MatMul", inputs={"kind": "expression", "source": MM}))
    assert r["status"] == "pass"
    assert [(i["name"], i["source"], i["shape"]) for i in r["inputs"]] == [
        ("a", "expression", [3, 4]), ("b", "expression", [4, 2])]


async def test_declared_float32_inputs_are_promoted(client):
    r = await run(client, func("good_functions.py", "cube", inputs={
        "kind": "expression", "source": "torch.tensor([0.5, 1.5], requires_grad=True)"}))
    assert r["status"] == "pass"
    assert (r["inputs"][0]["dtype"], r["inputs"][0]["promoted_from"]) == ("float64", "float32")


async def test_expression_that_raises(client):
    r = await run(client, fn_class("good_functions.py", "MyReLU", inputs={"kind": "expression", "source": "1/0"}))
    assert (r["status"], r["verdict"]) == ("error", "exception")
    assert r["exception"]["type"] == "ZeroDivisionError" and r["exception"]["phase"] == "inputs"


async def test_synthesized_inputs(client):
    r = await run(client, func("good_functions.py", "cube"))
    assert r["status"] == "pass"
    x = r["inputs"][0]
    assert (x["name"], x["source"], x["dtype"], x["requires_grad"], x["seed"]) == (
        "x", "synthesized", "float64", True, 0)
    values = [float(v) for v in x["preview"].strip("[]").split(", ") if v != "…"]
    assert all(0.3 <= abs(v) <= 0.7 or 1.3 <= abs(v) <= 1.7 for v in values)
    assert r["synthesis"]["shapes"] == [[3, 4]]  # 2-D with unequal sizes first
    assert r["synthesis"]["domain"] == "signed"


async def test_int_parameter_without_default_gets_an_int(client):
    # `dim: int` has no default: it is a dim (its name, its annotation, `x.sum(dim)`), not a tensor
    r = await run(client, func("good_functions.py", "needs_dim", inputs={"kind": "synthesize"}))
    assert r["status"] == "pass", r["summary"]
    assert r["inputs"][1]["kind"] == "value" and r["inputs"][1]["repr"] == "-1"
    assert "dim: int (annotation)" in r["synthesis"]["params"]


async def test_synthesis_with_explicit_shapes(client):
    r = await run(client, fn_class("good_functions.py", "MatMul",
                                   inputs={"kind": "synthesize", "shapes": [[2, 3], [3, 4]], "seed": 5}))
    assert r["status"] == "pass", r["summary"]
    assert [i["shape"] for i in r["inputs"]] == [[2, 3], [3, 4]]
    assert r["inputs"][0]["seed"] == 5


async def test_package_module_with_relative_import(client):
    r = await run(client, fn_class("pkg/ops.py", "PkgSquare"))
    assert r["status"] == "pass", r["summary"]
    assert r["target"]["module"] == "pkg.ops"


# --- errors in user code ------------------------------------------------------------


async def test_exception_traceback_is_filtered_to_user_files(client):
    r = await run(client, func("bad_functions.py", "raises_in_helper", inputs={
        "kind": "expression", "source": "torch.ones(3, dtype=torch.float64, requires_grad=True)"}))
    assert (r["status"], r["verdict"]) == ("error", "exception")
    e = r["exception"]
    assert e["type"] == "ValueError" and e["message"] == "bad value for x"
    frames = e["traceback"]
    assert [f["function"] for f in frames] == ["raises_in_helper", "helper_that_raises"]
    assert all(f["file"] == fixture("bad_functions.py") for f in frames)
    assert frames[-1]["code"] == 'raise ValueError("bad value for x")'
    assert r["location"]["line"] == frames[-1]["line"]
    assert r["summary"] == "✗ ValueError in forward: bad value for x"


async def test_unknown_target(client):
    r = await run(client, fn_class("good_functions.py", "NoSuchThing"))
    assert (r["status"], r["verdict"]) == ("error", "target_not_found")
    r = await run(client, fn_class("good_functions.py", "cube"))
    assert (r["status"], r["verdict"]) == ("error", "target_not_found")


async def test_import_error_in_user_module(client, tmp_path):
    bad = tmp_path / "broken.py"
    bad.write_text("import torch\nimport a_helper_nobody_installed\n")
    r = await run(client, {"module": {"path": str(bad)}, "sys_path": [str(tmp_path)],
                           "target": {"kind": "callable", "qualname": "f"}})
    # the interpreter lacks a module: the environment, said as such (not a gradient verdict)
    assert (r["status"], r["verdict"]) == ("error", "missing_dependency")
    assert r["summary"].startswith("✗ cannot run here: No module named 'a_helper_nobody_installed' "
                                   "(ModuleNotFoundError in import of broken); install it in ")
    assert r["exception"]["traceback"][-1]["line"] == 2


async def test_bad_request(client):
    r = await run(client, {"module": {"path": fixture("good_functions.py")}, "target": {"kind": "nope"}})
    assert (r["status"], r["verdict"]) == ("error", "bad_request")


# --- the child process ----------------------------------------------------------


async def test_user_output_goes_to_stderr_tail_not_the_protocol(client):
    r = await run(client, func("faults.py", "prints_then_ok"))
    assert r["status"] == "pass"
    assert "hello from user code" in r["stderr_tail"]
    assert "a warning from user code" in r["stderr_tail"]
    r = await run(client, func("faults.py", "reads_stdin"))
    assert r["status"] == "pass"


async def test_forked_child_runs_multithreaded_torch(client):
    # the worker itself never started a thread pool (a child forked from it would hang on one)
    with open("/proc/%d/status" % client.pid) as f:
        assert "Threads:\t1\n" in f.read()
    threads = max(2, client.info.num_threads)
    r = await run(client, func("good_functions.py", "threaded", options={"num_threads": threads}))
    assert r["status"] == "pass", r["summary"]
    assert r["environment"]["num_threads"] == threads
    assert "child threads: %d" % threads in r["stderr_tail"]


async def test_runs_side_by_side_share_the_cores(client):
    # two runs at once on N cores get N // 2 threads each: more OpenMP threads than cores
    # spin against each other (measured: a 1.5 s gradcheck took 40 s)
    r = await run(client, func("good_functions.py", "threaded"))
    assert r["environment"]["num_threads"] == max(1, (os.cpu_count() or 1) // 2)


async def test_progress_is_reported(client):
    seen = []
    r = await run(client, fn_class("good_functions.py", "MyReLU"), on_progress=lambda m, p: seen.append((m, p)))
    assert r["status"] == "pass"
    assert seen[0][0].startswith("importing") and seen[-1] == ("done", 100)
    assert "gradcheck" in [m for m, _ in seen]
    assert [p for _, p in seen] == sorted(p for _, p in seen)


async def test_each_run_sees_fresh_user_code(client, tmp_path):
    mod = tmp_path / "edited.py"
    mod.write_text("def f(x):\n    return x * 2\n")
    request = {"module": {"path": str(mod)}, "sys_path": [str(tmp_path)],
               "target": {"kind": "callable", "qualname": "f"}}
    assert (await run(client, request))["status"] == "pass"
    mod.write_text("def f(x):\n    raise NameError('edited')\n")
    r = await run(client, request)
    assert r["status"] == "error" and "edited" in r["summary"]


async def test_two_runs_in_parallel(client):
    import asyncio

    rs = [assert_valid(r) for r in await asyncio.gather(*(client.run(fn_class("good_functions.py", q), timeout=60)
                                                          for q in ("MyReLU", "Softmax", "SinCos")))]
    assert [r["status"] for r in rs] == ["pass"] * 3
    assert len({r["environment"]["pid"] for r in rs}) == 3


@pytest.mark.parametrize("fast_mode, modes", [(True, ["fast"]), (False, ["slow"]), ("auto", ["fast"])])
async def test_fast_mode_option(client, fast_mode, modes):
    r = await run(client, fn_class("bad_functions.py", "ScaleWrong", options={"fast_mode": fast_mode}))
    assert r["verdict"] == "wrong_gradient"
    d = check(r, "gradcheck")["details"]
    assert [m["mode"] for m in d["modes"]] == modes
    assert d["worst"][0]["rel_error"] == pytest.approx(0.5)


async def test_passing_fast_mode_is_confirmed_in_slow_mode_when_small(client):
    r = await run(client, fn_class("good_functions.py", "Softmax"))
    assert [m["mode"] for m in check(r, "gradcheck")["details"]["modes"]] == ["fast", "slow"]


async def test_batched_grad_option(client):
    r = await run(client, fn_class("bad_functions.py", "ItemInBackward"))
    assert r["status"] == "pass"
    r = await run(client, fn_class("bad_functions.py", "ItemInBackward", options={"check_batched_grad": True}))
    assert (r["status"], r["verdict"]) == ("fail", "batched_grad")
    assert "aten::item" in r["summary"]


async def test_unhandled_undefined_output_grad(client):
    r = await run(client, fn_class("bad_functions.py", "NoneGradUnhandled"))
    assert (r["status"], r["verdict"]) == ("fail", "undefined_grad")
    r = await run(client, fn_class("bad_functions.py", "NoneGradUnhandled", options={"check_undefined_grad": False}))
    assert r["status"] == "pass", r["summary"]


async def test_bad_option_value(client):
    r = await run(client, fn_class("good_functions.py", "MyReLU", options={"atol": "big"}))
    assert (r["status"], r["verdict"]) == ("error", "bad_request")
    assert r["summary"] == "✗ bad request: option atol must be a non-negative number"
