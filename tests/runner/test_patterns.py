"""The pattern named for a Jacobian mismatch (worker/patterns.py), on blocks made here."""
import torch

from gradlint.worker.patterns import classify


def _failing(a, n, atol=1e-5, rtol=1e-3):
    err = (a - n).abs()
    bad = ~(err <= atol + rtol * n.abs())
    return {"o": 0, "j": 0, "a": a, "n": n, "err": err, "bad": bad, "failing_elements": int(bad.sum()),
            "total_elements": a.numel(), "analytical_all_zero": bool((a == 0).all())}


def _classify(a, n):
    primary = _failing(a, n)
    return classify(primary, {(0, 0): (a, n)}, ["b"], [torch.zeros(3)], 1e-5, 1e-3)


def test_a_factor_within_one_percent_of_one_is_an_approximation_not_a_missing_factor():
    # torch-betainc's continued fraction cut off: 2 of 144 entries 0.2% and 0.45% off; the
    # least-squares "factor" is about 1.002, which no wrong formula has (it was "analytical = 1.001 x numerical")
    torch.manual_seed(0)
    n = torch.diag(torch.rand(144, dtype=torch.float64) * 0.5 + 0.05)  # an elementwise block, one big entry
    a = n.clone()
    a[15, 15] *= 1.0045
    n[26, 26] = 15.34
    a[26, 26] = 15.34 * 1.002  # b[2, 2]: numerical 15.34, analytical 15.35
    assert _classify(a, n) is None


def test_a_real_factor_is_still_named():
    torch.manual_seed(0)
    n = torch.randn(12, 12, dtype=torch.float64)
    pattern = _classify(1.5 * n, n)
    assert pattern is not None and pattern["kind"] == "scale", pattern
    assert "1.5" in pattern["short"]
