"""Processes a run starts outside its process group (setsid, double fork, a fork bomb in a
session of its own) do not outlive the run, however it ends.

Checked with the process tree: every process started from this module's worker carries a
token in its environment, so a daemon re-parented to init is found too.
"""
import asyncio
import os
import signal
import time

import pytest
import pytest_asyncio

from _runner_util import EXPR, FIXTURES, PYTHON, assert_valid, fn_class, func
from gradlint.runner import WorkerClient
from process_tree import kill_tagged, new_token, recorded_pids, tagged, tagged_env, wait_untagged

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def tree(tmp_path_factory):
    """A worker whose every descendant is tagged; yields (client, token, pid file)."""
    token = new_token()
    pids = tmp_path_factory.mktemp("escapes") / "pids"
    client = WorkerClient(PYTHON, FIXTURES, env=tagged_env(token, GRADLINT_TEST_PIDS=str(pids)),
                          max_parallel=2, grace=1.0)
    await client.start()
    try:
        yield client, token, pids
    finally:
        await client.close()
        kill_tagged(token)


def _fresh(pids):
    pids.write_text("")


def _only_the_worker(client, token):
    return sorted(tagged(token)) == [client.pid]


@pytest.mark.parametrize("name, at_least", [("setsid_child", 1), ("double_fork", 1), ("fork_bomb", 3)])
async def test_what_a_run_leaves_running_is_killed_when_it_ends(tree, name, at_least):
    client, token, pids = tree
    _fresh(pids)
    r = assert_valid(await client.run(func("faults.py", name, inputs=EXPR), timeout=60))
    assert r["status"] == "pass", r["summary"]
    escaped = recorded_pids(pids)
    assert len(escaped) >= at_least, "the fixture did not start its processes"
    # killed before the result was sent: nothing to wait for
    assert tagged(token) == [client.pid], "processes left: %s" % sorted(set(tagged(token)) - {client.pid})


async def _escaped_and_running(client, token, pids):
    deadline = time.monotonic() + 30
    while len(recorded_pids(pids)) < 2:
        assert time.monotonic() < deadline, "the fixture did not start its processes"
        await asyncio.sleep(0.02)
    assert len(tagged(token)) >= 4  # worker, run, setsid child, daemon


async def test_a_run_killed_at_its_timeout_takes_its_escapees_along(tree):
    client, token, pids = tree
    _fresh(pids)
    r = assert_valid(await client.run(func("faults.py", "escapes_then_hangs", inputs=EXPR), timeout=3))
    assert r["status"] == "timeout"
    assert len(recorded_pids(pids)) == 2
    assert _only_the_worker(client, token)


async def test_a_cancelled_run_takes_its_escapees_along(tree):
    client, token, pids = tree
    _fresh(pids)
    task = asyncio.ensure_future(client.run(func("faults.py", "escapes_then_hangs", inputs=EXPR), timeout=60))
    await _escaped_and_running(client, token, pids)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert wait_untagged(token, timeout=10, keep=1) == [client.pid]


async def test_a_hung_worker_killed_by_the_watchdog_takes_every_descendant_along(tree):
    client, token, pids = tree
    _fresh(pids)
    task = asyncio.ensure_future(client.run(func("faults.py", "escapes_then_hangs", inputs=EXPR), timeout=4))
    await _escaped_and_running(client, token, pids)
    zygote = client.pid
    os.kill(zygote, signal.SIGSTOP)  # it can no longer kill its run at the timeout
    r = assert_valid(await asyncio.wait_for(task, 30))
    assert r["status"] == "timeout" and "stopped answering" in r["summary"]
    assert tagged(token) == []
    r = assert_valid(await client.run(fn_class("good_functions.py", "MyReLU"), timeout=60))
    assert r["status"] == "pass" and client.pid != zygote


async def test_close_during_a_run_leaves_no_process(tree):
    client, token, pids = tree
    _fresh(pids)
    task = asyncio.ensure_future(client.run(func("faults.py", "escapes_then_hangs", inputs=EXPR), timeout=60))
    await _escaped_and_running(client, token, pids)
    await client.close()
    assert assert_valid(await asyncio.wait_for(task, 10))["status"] == "cancelled"
    assert tagged(token) == []
