"""The run's conclusion from its check records.

- When several checks fail, the failure that explains the others decides (``PRECEDENCE``
  below): a broken contract (an input written in place, a custom op's schema) before the
  exception or mismatch it causes, a forward that raises before anything downstream, a wrong
  number of gradients before a Jacobian mismatch. The report names the failures it explains.
- Otherwise the first failing check decides, in plan order, with three exceptions:
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
- a ✓ is a proof: it needs a first-order gradcheck that ran and passed, and a checked input
  some output moved with (``proof``); a gradcheck that was skipped or raised inside torch or
  gradlint makes the run **inconclusive** (``not_checked``) with the reason, never ✓. The ✓
  line says which inputs and outputs were compared (``result["proof"]``).
- the checks asked for with ``compile``/``dtype`` come after the gradient checks: a gradient
  failure is reported first (the compile or precision failure as a note), but a failing
  compile, torch.func or precision check fails a run the gradient checks alone would pass,
  warn about or find inconclusive (a straight-through estimator that compilation breaks);
  a graph break alone (``compile_unsupported``) is a warning.
"""

from .outcome import Outcome
from .proof import describe, gather, is_first_order

_KINK = "non_differentiable_point"
_PROOFS = ("gradcheck", "gradgradcheck", "forward_ad", "vmap", "jacrev", "opcheck")  # named in a ✓ summary
_ASKED = ("compile_mismatch", "func_mismatch", "precision_loss")  # failures of checks asked for
_COMPILE_WARNING = "compile_unsupported"


def _is_asked(rec):
    return rec["name"] == "func.grad" or rec["name"].startswith(("compile", "precision ("))


# -- which failure explains the others ------------------------------------------------------
# Checks that call the user's forward on real tensors as it is (no fake tensors; gradcheck's
# draws are "gradcheck (draw N)"): a forward that raises there is forward's own failure.
_PLAIN_FORWARD = ("forward", "sensitivity", "input_mutation", "random_op", "nondeterminism", "gradcheck",
                  "as_written")
# Checks that run forward again on real tensors (plainly, with dual numbers, or under vmap)
_RUN_FORWARD = _PLAIN_FORWARD + ("gradgradcheck", "forward_ad", "vmap", "jacrev", "gradcheck (")
# Checks that run the first-order backward (gradgradcheck differentiates it, jacrev through it)
_RUN_BACKWARD = ("nondeterminism", "gradcheck", "gradgradcheck", "jacrev", "as_written", "gradcheck (")
_UNDECLARED_MUTATION = "is not defined as mutable but was mutated"  # opcheck's test_schema, torch 2.13
# torch's engine, about what a backward returned (validate_outputs): no Jacobian to compare
_GRADIENT_COUNT = ("returned an incorrect number of gradients", "returned an invalid gradient at index")


def _breaks_contract(rec):
    return rec.get("verdict") in ("input_mutated", "op_schema")


def _forward_raised(rec):
    return rec["name"] == "forward" or (rec["name"] in _PLAIN_FORWARD and rec.get("verdict") == "exception"
                                        and _phase(rec) == "forward")


def _wrong_gradient_count(rec):
    text = (_exception(rec) or {}).get("message") or rec.get("message") or ""
    return rec["name"] in ("nondeterminism", "gradcheck", "as_written") and rec.get("verdict") == "exception" \
        and any(s in text for s in _GRADIENT_COUNT)


def _runs(names):
    return lambda rec, decisive: rec["name"].startswith(names)


def _wrote_an_input(rec):
    """The contract break is a write to an input: the runner saw it (input_mutated), or opcheck's
    test_schema did (torch: "Argument x is not defined as mutable but was mutated")."""
    if rec.get("verdict") == "input_mutated" or (rec.get("details") or {}).get("writes"):
        return True
    oc = _outcome_of(rec)
    said = [oc.summary, oc.message, str((rec.get("details") or {}).get("tests") or "")]
    return any(_UNDECLARED_MUTATION in (text or "") for text in said)


def _after_a_write(rec, decisive):
    """A check that ran forward again after forward wrote to one of its inputs. A schema failure
    that is not a write (an output that aliases an input) does not change the inputs: it
    explains no other failure, which the report then lists as also failing."""
    return _wrote_an_input(decisive) and _runs(_RUN_FORWARD)(rec, decisive)


class Cause(object):
    """A row of PRECEDENCE: which failing check records it ``holds(rec)``, and which other
    failures the decisive one ``explains(other, decisive)`` (they come from it: the report says so)."""

    def __init__(self, row, why, holds, explains):
        self.row, self.why, self.holds, self.explains = row, why, holds, explains


# When several checks fail, the verdict, the summary and the location come from the failure to fix
# first. Rows, strongest first: the first row that a failing check belongs to decides (between two
# checks of one row, the one that ran first); the report names the other failures, and says which
# of them the decisive one explains. Failures that belong to no row are judged as before: the first
# failing check in plan order, with the exceptions in the module docstring. A new verdict goes into
# the row of its kind, or into a new row at its place in this order, or stays out of the table to
# be judged in plan order. (docs/run-result-schema.md, 3.2, "When several checks fail")
PRECEDENCE = (
    Cause("contract", "forward writes to its inputs, or a custom op's schema does not say what the op does "
                      "(mutates_args, aliasing): after a write, every check that ran forward again ran it on "
                      "inputs that changed under it", _breaks_contract, _after_a_write),
    Cause("forward", "forward raised on the checked inputs: nothing that needs forward ran on a working one",
          _forward_raised, _runs(_RUN_FORWARD)),
    Cause("gradient_count", "backward returned the wrong number of gradients (or one of the wrong shape): "
                            "there is no Jacobian to compare",
          _wrong_gradient_count,
          lambda rec, decisive: _runs(_RUN_BACKWARD)(rec, decisive) or rec.get("verdict") == "op_compile"),
)


def _cause(records):
    """(the failing check record to report, its PRECEDENCE row), or (None, None)."""
    failing = [r for r in records if r["status"] in ("fail", "error") and not r["name"].startswith("gradcheck (")]
    for cause in PRECEDENCE:
        for rec in failing:
            if cause.holds(rec):
                return rec, cause
    return None, None


def _explain(result, rec, cause, records):
    """Name the other failures once each (torch's sentence once), those ``rec`` explains first."""
    explained, other = [], []
    for r in records:
        if r is rec or r["status"] not in ("fail", "error") or r["name"].startswith("gradcheck (draw"):
            continue
        oc = _outcome_of(r)
        loc = oc.extra.get("location") or {}
        at = " (line %s)" % loc["line"] if loc.get("line") and loc.get("file") == (
            result.get("location") or {}).get("file") else ""
        said = "%s%s: %s" % (r["name"], at, _strip(oc.summary or r["name"]).split(" Hint: ")[0].rstrip("."))
        (explained if cause.explains(r, rec) else other).append((r["name"], said))
    lines = []
    if explained:
        lines.append("Fix this first: it also explains %s." % "; ".join(said for _, said in explained))
    if other:
        lines.append("Also failing: %s." % "; ".join(said for _, said in other))
    if lines:
        result["message"] = "\n".join(([result["message"]] if result.get("message") else []) + lines)
    if explained:
        result["explains"] = [name for name, _ in explained]


def _exception(rec):
    return (rec.get("details") or {}).get("exception") or _outcome_of(rec).extra.get("exception")


def _phase(rec):
    return (_exception(rec) or {}).get("phase")


# Exceptions that no choice of inputs causes: a misspelt name, an unfinished function. A forward
# that raises one raises on any inputs: the code's own failure, whatever inputs were used.
_RAISED_ON_ANY_INPUTS = ("NameError", "UnboundLocalError", "NotImplementedError", "SyntaxError",
                         "IndentationError")


# torch's autograd.grad, when the tensors a backward differentiates are not connected the way its
# author's inputs connect them (a callable that closes over other tensors, parameters it reads)
_GRAPH_UNFIT = ("appears to not have been used in the graph", "does not require grad and does not have a grad_fn",
                "One of the differentiated Tensors does not require grad")


# a rank error: what backward's own code raises when it indexes tensors by more dimensions than
# the made-up inputs have (``T[:, :, :3, :3]`` on a 2-D tensor). Size and layout errors are not
# among them: a gradient built with the wrong number of values fails at every rank
_RANK_ERRORS = ("too many indices for tensor of dimension", "Dimension out of range")


def _rank_error_in_backward(exc, synthesis):
    """Backward's own code raised a rank error (``_RANK_ERRORS``), and the search for inputs found no
    shape at all on which backward runs (``synthesis["backward_rejected"]``): the made-up shapes
    never had the rank or sizes backward indexes by. The engine's own "returned an invalid
    gradient" (a gradient of the wrong shape) is backward's fault on any inputs, and stays ✗."""
    if exc.get("phase") != "backward" or not (synthesis or {}).get("backward_rejected"):
        return False
    kind = str(exc.get("type") or "").split(".")[-1]
    message = str(exc.get("message") or "")
    return bool(exc.get("traceback")) and kind in ("IndexError", "RuntimeError") and \
        any(w in message for w in _RANK_ERRORS)


def _unfit_phase(exc, synthesis=None):
    """Forward raised; or backward's own ``torch.autograd.grad`` found the graph it differentiates
    not built the way it expects (on made-up inputs: a callable argument that closes over tensors
    other than those passed, a parameter that does not require grad); or backward indexed the
    made-up tensors by a rank no shape tried had (``_rank_error_in_backward``)."""
    if exc.get("phase") == "forward":
        return "forward"
    if exc.get("phase") == "backward" and any(s in str(exc.get("message") or "") for s in _GRAPH_UNFIT):
        return "backward's own torch.autograd.grad"
    if _rank_error_in_backward(exc, synthesis):
        return "backward (on every shape tried)"
    return None


def inputs_unfit(result):
    """Forward raised on inputs gradlint synthesized (or backward's own ``torch.autograd.grad`` found
    no graph to differentiate, or backward's code a rank error on every shape tried:
    ``_unfit_phase``), and the project's own code gave none to use
    instead (explore.callers_instead): the exception shows that the made-up inputs did not fit the
    code (a flag made a tensor, a shape forward asserts against, a value off its domain), not
    that the code is wrong. Such a run is **inconclusive** (``inputs_unfit``), never ✗; an
    exception no inputs cause (a NameError) stays the code's failure."""
    exc = result.get("exception") or {}
    kind = str(exc.get("type") or "").split(".")[-1]
    phase = _unfit_phase(exc, result.get("synthesis"))
    if result.get("verdict") != "exception" or phase is None or kind in _RAISED_ON_ANY_INPUTS:
        return
    said = _strip(result.get("summary") or "")
    result.update(status="inconclusive", verdict="inputs_unfit",
                  summary="⚠ inconclusive: %s raised on the inputs gradlint made up (%s); no gradient "
                          "was checked" % (phase, said),
                  message="gradlint synthesized the inputs from forward's signature, and no code of the project "
                          "calls it with inputs to use instead. Declare inputs that fit (`# gradlint: "
                          "inputs=...` above it), or check it from a test that calls it (`pytest --gradlint`)."
                          + ("\n" + result["message"] if result.get("message") else ""))
    result.pop("explains", None)


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


def _close_draws(result, draws):
    """After a strict pass on the first draw, another draw that fails with no pattern and every
    error within a tenth of its Jacobian's largest entry (an iterative solver's tolerance at
    inputs it converges less well on) is no proof of a bug: named in a note, then counted as an
    approximate agreement (dropped from the draws that decide, like a 1% one)."""
    if not draws or draws[0]["name"] != "gradcheck" or draws[0]["status"] != "pass":
        return
    close = [d for d in draws[1:] if d["status"] == "fail" and (d.get("details") or {}).get("close_to_scale")]
    for d in close:
        d["verdict"] = "approximate_gradient"
    if close:
        result["notes"].append("gradcheck agrees only approximately on %d of %d input draws (%s): not counted "
                               "as a wrong gradient" % (len(close), len(draws), _strip(close[0].get("message") or "")))


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
    rec, cause = _cause(records)
    if rec is not None:
        _decide(result, rec)
        _explain(result, rec, cause, records)
        return
    variant = (result.get("target") or {}).get("variant")
    strict = bool(opts.get("strict"))
    if not strict and _shape_dependent(result, records):
        return
    draws = _draws(records)
    if not strict:
        _close_draws(result, draws)
    if not strict and all(_approximate(d) for d in draws if d["status"] == "fail"):
        # gradients within 1% everywhere: a warning, like second order
        draws = [d for d in draws if not _approximate(d)]
    failed = [d for d in draws if d["status"] == "fail"]
    warn = None  # the check that makes a passing run a warning
    for rec in records:
        if rec["status"] not in ("fail", "error") or rec["name"].startswith("gradcheck (draw"):
            continue
        if rec["name"].startswith("gradcheck (") and rec.get("verdict") == _KINK:
            # a mode, other inputs or ties that land on a kink: named, not a wrong gradient
            result["notes"].append("%s: %s" % (rec["name"], _strip(rec.get("message") or "")))
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
    if not any(r["status"] == "pass" and is_first_order(r["name"]) for r in records):
        if warn is not None and _approximate(warn):  # every draw agrees within 1%, none strictly: that, not "did not run"
            _approximately(result, warn)
            return
        _not_checked(result, records)
        return
    proof = gather(records, _grad_names(result), _unchecked(result))
    result["proof"] = proof
    if not proof["inputs"]:
        result.update(status="inconclusive", verdict="vacuous",
                      summary="⚠ inconclusive: no output moves when the inputs move here (%d draw%s), so gradcheck "
                              "passes vacuously" % (proof["draws"], "" if proof["draws"] == 1 else "s"),
                      message="The Jacobian is zero at these inputs (e.g. a projection whose output is one-hot, "
                              "saturated values, points outside an interpolation grid, a mode where the function is "
                              "constant), so the check proves nothing. Check at inputs where the function is not "
                              "flat (declare them with `# gradlint: inputs=...`).")
        return
    result["status"] = "pass"
    result["verdict"] = "ok"
    ran = [c["name"] for c in records if c["status"] == "pass" and c["name"] in _PROOFS]
    n_draws = sum(1 for d in draws if d["status"] == "pass")
    if n_draws > 1 and "gradcheck" in ran:
        ran[ran.index("gradcheck")] = "gradcheck ×%d draws" % n_draws
    elsewhere = [n for n in result.get("depends_elsewhere") or [] if n in proof["zero"]]
    if elsewhere:
        result.update(status="inconclusive", verdict="vacuous",
                      summary="⚠ inconclusive: gradcheck compared the Jacobian of %s only where it is zero (no "
                              "output moved with %s at any input checked, but the output depends on %s elsewhere)"
                              % (", ".join(elsewhere), "it" if len(elsewhere) == 1 else "them",
                                 "it" if len(elsewhere) == 1 else "them"),
                      message="Its gradient was never compared where it matters: inputs outside a grid, a "
                              "threshold never crossed, a mode where the function is constant in it. Check at "
                              "inputs where the output moves with it (declare them with `# gradlint: inputs=...`).")
        return
    dts = sorted(set(i["dtype"] for i in result["inputs"] if i.get("kind") == "tensor"))
    modes = [m for m in result.get("modes") or [] if m["status"] in ("pass", "checked first")]
    if len(modes) > 1:
        ran.append("modes %s" % ", ".join("%s=%s" % kv for m in modes for kv in sorted(m["mode"].items())))
    refined = result.get("refined") or {}
    setting = ""
    if refined:  # explore.refined: checked with more iterations or a tighter tolerance than given
        setting = "; at %s, not %s: an iterative approximation" % (
            ", ".join("%s=%s" % (k, v["to"]) for k, v in refined.items()), ", ".join(v["from"] for v in refined.values()))
    finer = result.get("finer_step")
    if finer:  # explore.finer_step: finite differences at the default step were too coarse here
        setting += "; eps=%g: the step %g is too coarse where forward curves sharply" % (finer["to"], finer["from"])
    result["summary"] = "✓ gradients match: %s (%s; %s%s)" % (", ".join(ran), describe(proof), "/".join(dts), setting)
    if proof["zero"]:
        result["notes"].append("no output depends on %s (not at any input checked, nor far from them, where an "
                               "output may jump but is flat again): its zero gradient is checked"
                               % ", ".join(proof["zero"]))
    for c in records:
        if c["status"] == "skipped" and c.get("verdict") == "not_twice_differentiable":
            result["notes"].append("second-order gradients not checked: backward is @once_differentiable")
    if warn is not None and _approximate(warn):
        _approximately(result, warn)
    elif warn is not None:
        oc = _outcome_of(warn)
        result.update(status="warning", verdict=warn.get("verdict") or "not_twice_differentiable",
                      failed_check="gradgradcheck",
                      summary="⚠ first-order gradients match; gradgradcheck fails: %s" % _strip(oc.summary),
                      message=(oc.message or "") + " Second order fails the run only with --strict (or when "
                              "the call itself is a gradgradcheck); mark backward @once_differentiable if double "
                              "backward is not supported.")
        result["location"] = oc.extra.get("location")


def _approximately(result, warn):
    """The run's answer when gradcheck agrees only approximately (within 1%): a warning naming it."""
    oc = _outcome_of(warn)
    result.update(status="warning", verdict="approximate_gradient", failed_check=warn["name"],
                  summary="⚠ %s" % _strip(oc.summary), message=oc.message)
    result["location"] = oc.extra.get("location")


def _grad_names(result):
    return [i["name"] for i in result.get("inputs") or [] if i.get("kind") == "tensor" and i.get("requires_grad")]


def _unchecked(result):
    """Floating tensor inputs gradcheck did not differentiate (a call site's own choice)."""
    return [{"input": i["name"], "why": i.get("not_checked") or "it does not require grad"}
            for i in result.get("inputs") or [] if i.get("kind") == "tensor" and not i.get("requires_grad")
            and str(i.get("dtype", "")).startswith(("float", "complex"))]


def _not_checked(result, records):
    """No first-order gradcheck passed and none failed: it was skipped or raised inside torch or
    gradlint. Inconclusive, with the reason."""
    skipped = next((r for r in records if is_first_order(r["name"]) and r["status"] in ("skipped", "error")), None)
    reason = (skipped.get("message") or "skipped") if skipped is not None else "no gradcheck ran"
    result.update(status="inconclusive", verdict="not_checked",
                  summary="⚠ inconclusive: gradcheck did not run: %s" % _strip(reason),
                  message="No Jacobian was compared, so nothing is proved. The reason above comes from torch or "
                          "from gradlint's own checking code, not from a mismatch.")
