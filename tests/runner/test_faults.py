"""Runs that hang, crash, exhaust memory or flood output; each is followed by a good run."""
import asyncio
import time

import pytest

from _runner_util import EXPR, alive, wait_dead, assert_valid, fixture, fn_class, func, marker_line

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def then_a_good_run(client):
    r = assert_valid(await client.run(fn_class("good_functions.py", "MyReLU"), timeout=60))
    assert r["status"] == "pass", r["summary"]


async def test_infinite_loop_times_out(client):
    zygote = client.pid
    r = assert_valid(await client.run(func("faults.py", "forever", inputs=EXPR), timeout=1.5))
    assert r["status"] == "timeout"  # (killed by its timeout: how long that took is the machine's)
    assert r["summary"] == "⏱ timed out after 1.5 s (the run was killed)"
    assert not alive(r["environment"]["pid"])
    assert client.pid == zygote  # the worker itself survives
    await then_a_good_run(client)


async def test_segfault_is_a_crash_mapped_to_user_line(client):
    r = assert_valid(await client.run(func("faults.py", "segfault", inputs=EXPR), timeout=30))
    assert r["status"] == "crash"
    assert r["crash"]["signal_name"] == "SIGSEGV"
    assert r["summary"].startswith("✗ crashed: killed by SIGSEGV (segmentation fault) in segfault (faults.py:")
    assert "Fatal Python error: Segmentation fault" in r["stderr_tail"]
    line = marker_line("faults.py", "segfault")
    assert r["crash"]["traceback"][0]["line"] == line
    assert r["crash"]["traceback"][0]["code"] == "ctypes.string_at(0)  # FAULT: segfault"
    assert r["location"] == {"file": fixture("faults.py"), "line": line, "function": "segfault",
                             "reason": "crashed here"}
    await then_a_good_run(client)


async def test_os_exit_is_a_crash(client):
    r = assert_valid(await client.run(func("faults.py", "exit3", inputs=EXPR), timeout=30))
    assert r["status"] == "crash"
    assert r["summary"] == "✗ crashed: the code exited the process with status 3"
    assert r["crash"]["exit_code"] == 3
    await then_a_good_run(client)


async def test_huge_allocation_is_a_memory_error(client):
    r = assert_valid(await client.run(func("faults.py", "huge", inputs=EXPR), timeout=30))
    assert r["status"] == "memory"
    assert r["summary"] == "✗ out of memory: the code tried to allocate 50 GiB (cap 4 GiB)"
    assert "can't allocate memory" in r["message"]
    assert r["location"]["line"] == marker_line("faults.py", "huge") + 1
    await then_a_good_run(client)


async def test_memory_cap_is_a_request_limit(client):
    # 2 GiB fits under 4 GiB but not under a 1 GiB cap
    request = func("faults.py", "prints_then_ok", inputs={
        "kind": "expression", "source": "(torch.empty(2 * 2**30, dtype=torch.uint8), torch.ones(3, dtype=torch.float64, requires_grad=True))[1]"})
    request["limits"] = {"memory_bytes": 2 ** 30}
    r = assert_valid(await client.run(request, timeout=30))
    assert r["status"] == "memory"
    assert r["summary"] == "✗ out of memory: the code tried to allocate 2 GiB (cap 1 GiB)"
    await then_a_good_run(client)


async def test_flooding_stdout_hits_the_output_limit(client):
    r = assert_valid(await client.run(func("faults.py", "chatty", inputs=EXPR), timeout=600))
    assert r["status"] == "output_limit"  # stopped by the limit (not by the timeout)
    assert r["summary"] == "✗ stopped: the code wrote more than 8 MiB to stdout/stderr"
    assert 8 * 2 ** 20 < r["output_bytes"] < 100 * 2 ** 20
    assert len(r["stderr_tail"]) == 64 * 1024
    await then_a_good_run(client)


async def test_system_exit_is_an_error(client):
    r = assert_valid(await client.run(func("faults.py", "sys_exit", inputs=EXPR), timeout=30))
    assert (r["status"], r["verdict"]) == ("error", "exception")
    assert r["summary"] == "✗ the code raised SystemExit(2), which stops the program"
    assert r["exception"]["traceback"][-1]["function"] == "sys_exit"
    await then_a_good_run(client)


async def test_keyboard_interrupt_is_an_error(client):
    r = assert_valid(await client.run(func("faults.py", "keyboard_interrupt", inputs=EXPR), timeout=30))
    assert (r["status"], r["verdict"]) == ("error", "exception")
    assert "KeyboardInterrupt" in r["summary"]
    await then_a_good_run(client)


async def test_cancelling_the_task_kills_the_run(client):
    task = asyncio.ensure_future(client.run(func("faults.py", "forever", inputs=EXPR), timeout=60))
    deadline = time.monotonic() + 300  # (a safety net: the run starts when the machine lets it)
    while not client.running_children:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.01)
    (child,) = client.running_children.values()
    assert alive(child)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await wait_dead(child)
    await then_a_good_run(client)
    assert client.running_children == {}


async def test_parallel_runs_are_independent(client):
    # a run that never ends does not hold up another one (no timing: it is cancelled after)
    slow = asyncio.ensure_future(client.run(func("faults.py", "forever", inputs=EXPR), timeout=600))
    fast = assert_valid(await client.run(fn_class("good_functions.py", "Softmax"), timeout=600))
    assert fast["status"] == "pass"
    assert not slow.done()
    slow.cancel()
    with pytest.raises(asyncio.CancelledError):
        await slow
