"""The run's conclusion from its check records.

- The first failing check decides, in plan order, with three exceptions:
- gradcheck is judged over all input draws: it fails when most draws fail; when draws
  disagree the run is **inconclusive** (a point near a kink or an unstable region),
  unless only kinks failed;
- a gradgradcheck failure (a mismatch, or double backward raising) after first-order
  gradients matched is a **warning** (⚠ not twice differentiable), a failure only with ``strict`` or when the call site itself
  asked for gradgradcheck; so is a gradcheck mismatch within 1% everywhere (an
  approximation in forward or backward, ``approximate_gradient``);
- a passing gradcheck where no output moves when the inputs move is **inconclusive**
  (vacuous), never a pass; so is a gradcheck failure on a gradient hook or a surrogate
  gradient (``surrogate_gradient``, see surrogates.py);
- the checks asked for with ``compile``/``dtype`` come after the gradient checks: a gradient
  failure is reported first (the compile or precision failure as a note), but a failing
  compile, torch.func or precision check fails a run the gradient checks alone would pass,
  warn about or find inconclusive (a straight-through estimator that compilation breaks);
  a graph break alone (``compile_unsupported``) is a warning.
"""

from .outcome import Outcome

_KINK = "non_differentiable_point"
_PROOFS = ("gradcheck", "gradgradcheck", "forward_ad", "vmap", "jacrev", "opcheck")  # named in a ✓ summary
_ASKED = ("compile_mismatch", "func_mismatch", "precision_loss")  # failures of checks asked for
_COMPILE_WARNING = "compile_unsupported"


def _is_asked(rec):
    return rec["name"] == "func.grad" or rec["name"].startswith(("compile", "precision ("))


def apply_outcome(result, oc):
    result["status"] = oc.status
    result["verdict"] = oc.verdict
    result["summary"] = oc.summary
    result["message"] = oc.message
    for k, v in oc.extra.items():
        result[k] = v


def _outcome_of(rec):
    oc = rec.get("_outcome")
    if oc is None:
        oc = Outcome(rec["status"], rec.get("verdict"), rec.get("message") or rec["name"])
    return oc


def _draws(records):
    return [r for r in records if r["name"] == "gradcheck" or r["name"].startswith("gradcheck (draw")]


def _decide(result, rec, note=None):
    apply_outcome(result, _outcome_of(rec))
    if result["verdict"] == "surrogate_gradient":
        result["status"] = "inconclusive"  # a hook or a surrogate by design: not a wrong gradient
    result["failed_check"] = rec["name"]
    if note:
        result["notes"].append(note)


def _strip(summary):
    return summary[2:] if summary[:2] in ("✗ ", "✓ ", "⚠ ") else summary


def _approximate(rec):
    return rec.get("verdict") == "approximate_gradient"


def _shape_dependent(result, records):
    """gradcheck fails at the synthesized shapes and passes at others forward takes."""
    other = next((r for r in records if r["name"] in ("gradcheck (other shapes)", "gradcheck (callers' inputs)")
                  and r["status"] == "pass"), None)
    first_bad = next((r for r in records if r["status"] in ("fail", "error")
                      and not r["name"].startswith("gradcheck (")), None)
    if other is None or first_bad is None or first_bad["name"] != "gradcheck":
        return False
    shown = lambda shapes: ", ".join("×".join(str(d) for d in s) or "scalar" for s in shapes)  # noqa: E731
    passing = ("for (%s)" % shown(other["details"]["shapes"]) if "shapes" in other["details"] else
               "on the inputs %s passes" % other["details"]["caller"])
    result.update(status="inconclusive", verdict="shape_dependent", failed_check="gradcheck",
                  summary="⚠ inconclusive: gradcheck fails for synthesized inputs shaped (%s) and passes %s: %s"
                          % (shown(other["details"]["failing_shapes"]), passing,
                             _strip(first_bad.get("message") or "")),
                  message="The gradients match at some shapes forward accepts and not at others: broadcasting or "
                          "batching the backward does not handle (or that callers never use). Check at the shapes "
                          "your code uses (declare them with `# gradlint: inputs=...`).")
    result["location"] = _outcome_of(first_bad).extra.get("location")
    return True


def conclude(result, records, opts):
    asked = [r for r in records if _is_asked(r)]
    gradient = [r for r in records if not _is_asked(r)]
    _conclude_gradients(result, gradient, opts)
    _conclude_asked(result, asked, opts)


def _conclude_asked(result, asked, opts):
    """The compile/func/precision checks, after the gradient checks have concluded."""
    hard = next((r for r in asked if r["status"] == "fail" and r.get("verdict") in _ASKED), None)
    soft = next((r for r in asked if r["status"] == "fail" and r.get("verdict") == _COMPILE_WARNING), None)
    if opts.get("strict") and hard is None:
        hard = soft
    if hard is not None:
        if result["status"] in ("fail", "error"):
            result["notes"].append("also: %s" % _strip(_outcome_of(hard).summary))
            return
        before = result.get("summary")
        _decide(result, hard)
        if before and not before.startswith("✓"):
            result["notes"].append("the gradient checks alone: %s" % _strip(before))
        return
    if result["status"] != "pass":
        if soft is not None:
            result["notes"].append("also: %s" % _strip(_outcome_of(soft).summary))
        return
    _name_asked(result, asked)
    if soft is not None:
        oc = _outcome_of(soft)
        result.update(status="warning", verdict=_COMPILE_WARNING, failed_check=soft["name"],
                      summary="⚠ gradients match; %s" % _strip(oc.summary), message=oc.message)
        result["location"] = oc.extra.get("location")


def _name_asked(result, asked):
    """A passing run's ✓ summary names the compile and precision checks that passed."""
    passed = [r for r in asked if r["status"] == "pass"]
    if not passed or not result["summary"].startswith("✓ gradients match: "):
        return
    compiled = [r for r in passed if r["name"].startswith("compile")]
    extra = []
    if compiled:
        backends = sorted(set(r["details"].get("backend") for r in compiled if r["details"].get("backend")))
        extra.append("compiled ×%d (%s)" % (len(compiled), ", ".join(backends)))
    if any(r["name"] == "func.grad" for r in passed):
        extra.append("torch.func.grad")
    for r in passed:
        if r["name"].startswith("precision ("):
            worst = r["details"].get("worst_tensor") or {}
            extra.append("%s within %s× of PyTorch's error" % (r["details"]["dtype"], r["details"]["factor"])
                         if worst.get("reference_error") else "%s precision" % r["details"]["dtype"])
    head, _, tail = result["summary"][len("✓ gradients match: "):].partition(" (")
    result["summary"] = "✓ gradients match: %s (%s" % (", ".join([head] + extra), tail)


def _conclude_gradients(result, records, opts):
    variant = (result.get("target") or {}).get("variant")
    strict = bool(opts.get("strict"))
    if not strict and _shape_dependent(result, records):
        return
    draws = _draws(records)
    if not strict and all(_approximate(d) for d in draws if d["status"] == "fail"):
        # gradients within 1% everywhere: a warning, like second order
        draws = [d for d in draws if not _approximate(d)]
    failed = [d for d in draws if d["status"] == "fail"]
    warn = None  # the check that makes a passing run a warning
    for rec in records:
        if rec["status"] not in ("fail", "error") or rec["name"].startswith("gradcheck (draw"):
            continue
        if rec["name"] == "gradcheck" and rec["status"] == "fail" and len(draws) > 1:
            break  # judged over the draws below
        if not strict and (_approximate(rec) or (rec["name"] == "gradgradcheck" and variant != "gradgradcheck"
                                                 and (rec["status"] == "fail" or rec.get("verdict") == "exception"))):
            warn = warn or rec
            continue
        _decide(result, rec)
        return
    if failed and len(draws) > 1:
        note = "gradcheck failed on %d of %d input draws" % (len(failed), len(draws))
        if 2 * len(failed) > len(draws):
            _decide(result, failed[0], note)
            return
        if not all(d.get("verdict") == _KINK for d in failed):
            first = failed[0]
            result.update(status="inconclusive", verdict="draw_dependent", failed_check=first["name"],
                          summary="⚠ inconclusive: gradcheck fails on %d of %d input draws (%s)"
                                  % (len(failed), len(draws), _strip(first.get("message") or "")),
                          message="The gradients match at some draws of the inputs and not at others: the failing "
                                  "draw is probably near a kink or an unstable region. Check with inputs away from "
                                  "it (declare them with `# gradlint: inputs=...`).")
            result["location"] = _outcome_of(first).extra.get("location")
            result["notes"].append(note)
            return
        result["notes"].append(note + " (at a kink); the others pass")
    sensitivity = next((r for r in records if r["name"] == "sensitivity" and r["status"] == "pass"), None)
    gradcheck_passed = any(d["status"] == "pass" for d in draws)
    if sensitivity is not None and gradcheck_passed and not sensitivity["details"].get("responds_to"):
        result.update(status="inconclusive", verdict="vacuous",
                      summary="⚠ inconclusive: no output moves when the inputs move here, so gradcheck passes "
                              "vacuously",
                      message="The Jacobian is zero at these inputs (e.g. a projection whose output is one-hot, "
                              "or saturated values), so the check proves nothing. Check at inputs where the "
                              "function is not flat (declare them with `# gradlint: inputs=...`).")
        return
    result["status"] = "pass"
    result["verdict"] = "ok"
    ran = [c["name"] for c in records if c["status"] == "pass" and c["name"] in _PROOFS]
    n_draws = sum(1 for d in draws if d["status"] == "pass")
    if n_draws > 1 and "gradcheck" in ran:
        ran[ran.index("gradcheck")] = "gradcheck ×%d draws" % n_draws
    n_t = sum(1 for i in result["inputs"] if i.get("kind") == "tensor")
    dts = sorted(set(i["dtype"] for i in result["inputs"] if i.get("kind") == "tensor"))
    result["summary"] = "✓ gradients match: %s (%d input%s, %s)" % (
        ", ".join(ran) if ran else "no checks", n_t, "" if n_t == 1 else "s", "/".join(dts))
    if sensitivity is not None and sensitivity["details"].get("insensitive"):
        result["notes"].append("no output moves with %s at these inputs: its gradient is checked only where it "
                               "is zero" % ", ".join(sensitivity["details"]["insensitive"]))
    for c in records:
        if c["status"] == "skipped" and c.get("verdict") == "not_twice_differentiable":
            result["notes"].append("second-order gradients not checked: backward is @once_differentiable")
    if warn is not None and _approximate(warn):
        oc = _outcome_of(warn)
        result.update(status="warning", verdict="approximate_gradient", failed_check=warn["name"],
                      summary="⚠ %s" % _strip(oc.summary), message=oc.message)
        result["location"] = oc.extra.get("location")
    elif warn is not None:
        oc = _outcome_of(warn)
        result.update(status="warning", verdict=warn.get("verdict") or "not_twice_differentiable",
                      failed_check="gradgradcheck",
                      summary="⚠ first-order gradients match; gradgradcheck fails: %s" % _strip(oc.summary),
                      message=(oc.message or "") + " Second order fails the run only with --strict (or when "
                              "the call itself is a gradgradcheck); mark backward @once_differentiable if double "
                              "backward is not supported.")
        result["location"] = oc.extra.get("location")
