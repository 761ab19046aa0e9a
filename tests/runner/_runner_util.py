"""Helpers shared by the runner tests."""
import asyncio
import json
import os
import sys
import time

from gradlint.runner import STATUSES, VERDICTS, RunResult, make_request

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
PYTHON = sys.executable
# declared inputs that always work: one float64 tensor that requires grad
EXPR = {"kind": "expression", "source": "torch.ones(3, dtype=torch.float64, requires_grad=True)"}


def alive(pid):
    """True while pid exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


async def wait_dead(pid, timeout=120.0):
    deadline = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


def fixture(name):
    return os.path.join(FIXTURES, name)


def req(file, target, **kw):
    """A run request for a fixture file, with the fixtures folder as the workspace root."""
    return make_request(fixture(file), target, workspace_root=FIXTURES, **kw)


def fn_class(file, qualname, **kw):
    return req(file, {"kind": "function_class", "qualname": qualname}, **kw)


async def run_class(client, file, qualname, timeout=240):
    """A Function class of a fixture file run for real in the client's worker: its result's JSON."""
    return assert_valid(await client.run(fn_class(file, qualname), timeout=timeout))


def func(file, qualname, **kw):
    return req(file, {"kind": "callable", "qualname": qualname}, **kw)


def marker_line(file, marker):
    """The line holding `# CALL: <marker>` (or `# FAULT: <marker>`)."""
    with open(fixture(file)) as f:
        for n, line in enumerate(f, 1):
            if line.rstrip().endswith(": " + marker) and "#" in line:
                return n
    raise LookupError(marker)


def call_site(file, marker, enclosing=None, **kw):
    """A call_site request for the gradcheck call ending on the marked line."""
    end = marker_line(file, marker)
    with open(fixture(file)) as f:
        lines = f.read().splitlines()
    start = end
    while "gradcheck(" not in lines[start - 1]:
        start -= 1
    target = {"kind": "call_site", "line": start, "end_line": end}
    if enclosing:
        target["enclosing"] = enclosing
    return req(file, target, **kw)


def def_line(file, text):
    """The line of the first line containing text (e.g. a `def backward` under a class)."""
    with open(fixture(file)) as f:
        for n, line in enumerate(f, 1):
            if text in line:
                return n
    raise LookupError(text)


def method_line(file, cls, method):
    with open(fixture(file)) as f:
        lines = f.read().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("class %s(" % cls) or ln.startswith("class %s:" % cls))
    for i in range(start + 1, len(lines)):
        if lines[i].strip().startswith("def %s(" % method):
            return i + 1
    raise LookupError(method)


def check(result, name):
    return next(c for c in result["checks"] if c["name"] == name)


def assert_valid(result):
    """Every result is a RunResult whose JSON (the schema, as `gradlint run --format json`
    writes it) has the documented top-level keys and known status/verdict; returns the JSON."""
    assert isinstance(result, RunResult), type(result)
    result = as_json(result)
    for key in ("schema", "version", "id", "status", "verdict", "summary", "message", "target", "location",
                "inputs", "outputs", "options", "checks", "exception", "crash", "notes", "warnings",
                "stderr_tail", "output_bytes", "timings", "environment"):
        assert key in result, key
    assert result["schema"] == "gradlint.run-result"
    assert result["status"] in STATUSES, result["status"]
    assert result["verdict"] is None or result["verdict"] in VERDICTS, result["verdict"]
    assert result["summary"] and "\n" not in result["summary"]
    for c in result["checks"]:
        assert c["status"] in ("pass", "fail", "error", "skipped"), c
        assert isinstance(c["seconds"], float)
    return result


def as_json(result):
    """A RunResult as the JSON a process boundary writes (json.dumps, then loads)."""
    return json.loads(json.dumps(result.to_json(), allow_nan=False))
