"""The precision verdict on a CUDA device with TF32 (skipped without a GPU: none in CI here)."""
import pytest
import torch

from _runner_util import assert_valid, check, fn_class

pytestmark = [pytest.mark.asyncio(loop_scope="module"),
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]

INPUTS = {"kind": "expression",
          "source": "(torch.randn(64, 128, dtype=torch.float64, device='cuda', requires_grad=True), "
                    "torch.randn(128, 32, dtype=torch.float64, device='cuda', requires_grad=True))"}


async def test_a_float32_matmul_under_tf32_is_judged_against_pytorchs_tf32_matmul(client):
    request = fn_class("precision_targets.py", "MatMul", inputs=INPUTS, options={"dtype": "float32"})
    r = assert_valid(await client.run(request, timeout=300))
    assert r["status"] == "pass", r["summary"]
    d = check(r, "precision (float32)")["details"]
    assert d["device"].startswith("cuda")
    assert set(d["tf32"]) == {"cuda_matmul", "cudnn", "float32_matmul_precision"}
