"""`options.dtype`: the precision-relative verdict, run for real in a worker (torch 2.13, CPU)."""
import pytest

from _runner_util import assert_valid, check, fn_class, method_line

from gradlint.runner.report import render_markdown, render_text
from gradlint.runner.report_checks import passed_lines
from gradlint.runner.result import RunResult

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def run(client, request):
    return assert_valid(await client.run(request, timeout=300))


def target(qualname, **options):
    return fn_class("precision_targets.py", qualname, options=options)


async def test_a_float32_backward_passes_at_bfloat16(client):
    r = await run(client, target("RMSNorm", dtype="bfloat16"))
    assert (r["status"], r["verdict"]) == ("pass", "ok"), r["summary"]
    rec = check(r, "precision (bfloat16)")
    d = rec["details"]
    assert d["reference"] == "through_forward" and d["factor"] == 2.0
    assert [p["probe"] for p in d["probes"]] == ["inputs as drawn", "small grad_outputs (×2^-20)",
                                                 "large inputs (×2^7)"]
    for probe in d["probes"]:
        assert probe["draws"] == 4
        for row in probe["tensors"]:
            assert row["passed"] and row["error"] <= row["allowed"]
            assert row["reference_error"] > 0  # bfloat16 has an error of its own: the yardstick is real
    assert "bfloat16 within 2" in r["summary"]
    [line] = passed_lines(RunResult.from_json(r))
    assert line.startswith("    precision (bfloat16): within k = 2 × the error of ") and " worst " in line, line


def _row(text: str, probe: str, tensor: str) -> list[str]:
    [line] = [line for line in text.splitlines() if line.strip().startswith(probe) and f" {tensor} " in line]
    return line.split()


async def test_a_backward_through_float16_intermediates_fails_at_bfloat16(client):
    r = await run(client, target("RMSNormHalfBackward", dtype="bfloat16"))
    assert (r["status"], r["verdict"], r["failed_check"]) == ("fail", "precision_loss", "precision (bfloat16)")
    worst = check(r, "precision (bfloat16)")["details"]["worst_tensor"]
    assert worst["name"] == "x" and worst["ratio"] > 2 and not worst["passed"]
    assert "less accurate than PyTorch's own bfloat16 computation" in r["summary"]
    assert r["location"]["line"] == method_line("precision_targets.py", "RMSNormHalfBackward", "backward")
    # the float64 checks cannot see it: the backward is exact in float64
    assert check(r, "gradcheck")["status"] == "pass"
    # the report shows both errors and their ratio for each probe and tensor
    text = render_text(RunResult.from_json(r), "RMSNormHalfBackward")
    assert "precision (bfloat16), k = 2: each output and gradient's max |Δ| against float64" in text
    assert "probe" in text and "reference" in text and "ratio" in text
    row = _row(text, worst["probe"], "grad x")
    assert row[-1] == "✗" and float(row[-3].rstrip("×")) > 2, row
    assert float(row[-5]) > float(row[-4]) > 0  # the Function's error, then the reference's
    markdown = render_markdown(RunResult.from_json(r), "RMSNormHalfBackward")
    assert "| probe | of | error | reference | ratio | |" in markdown


async def test_float16_too(client):
    good = await run(client, target("RMSNorm", dtype="float16"))
    bad = await run(client, target("RMSNormHalfBackward", dtype="float16"))
    assert good["status"] == "pass" and bad["verdict"] == "precision_loss"


async def test_a_declared_reference_is_the_yardstick(client):
    r = await run(client, target("RMSNormHalfBackward", dtype="bfloat16", reference="rms_norm_reference"))
    d = check(r, "precision (bfloat16)")["details"]
    assert d["reference"] == "declared" and "rms_norm_reference" in d["reference_label"]
    assert r["verdict"] == "precision_loss"


async def test_without_a_differentiable_forward_the_yardstick_is_exact_rounding(client):
    r = await run(client, target("ExpNoGradForward", dtype="bfloat16"))
    assert r["status"] == "pass", r["summary"]
    d = check(r, "precision (bfloat16)")["details"]
    assert d["reference"] == "exact_rounding"
    assert any("autograd through forward raised" in n for n in d["reference_notes"])


async def test_a_factor_loose_enough_passes_the_sloppy_backward(client):
    r = await run(client, target("RMSNormHalfBackward", dtype="bfloat16", precision_factor=1000.0))
    assert r["status"] == "pass", r["summary"]


async def test_an_unknown_dtype_or_reference_is_a_bad_request(client):
    r = await run(client, target("RMSNorm", dtype="int8"))
    assert (r["status"], r["verdict"]) == ("error", "bad_request")
    r = await run(client, target("RMSNorm", dtype="bfloat16", reference="no_such_function"))
    assert (r["status"], r["verdict"]) == ("error", "bad_request")
    assert "no_such_function" in r["summary"]


async def test_a_gradgradcheck_failure_does_not_skip_the_precision_verdict(client):
    r = await run(client, fn_class("real_styles.py", "NllLoss", options={"dtype": "bfloat16", "draws": 1}))
    assert r["verdict"] == "not_twice_differentiable"
    assert check(r, "precision (bfloat16)")["status"] == "pass"  # an int64 target rides along unchanged
