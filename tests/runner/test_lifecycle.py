"""Starting, restarting, watchdog and closing the worker."""
import asyncio
import glob
import os
import signal
import time
import venv

import pytest
import pytest_asyncio

from _runner_util import EXPR, alive, wait_dead, FIXTURES, PYTHON, assert_valid, fn_class, func
from gradlint.runner import WorkerClient, WorkerStartError, run_sync


async def wait_for_child(client, timeout=300.0):
    deadline = time.monotonic() + timeout
    while not client.running_children:
        assert time.monotonic() < deadline, "no run started"
        await asyncio.sleep(0.01)
    return next(iter(client.running_children.values()))


# --- start-up failures (no torch import needed) ------------------------------------


async def test_interpreter_not_found():
    client = WorkerClient("/nonexistent/bin/python3", FIXTURES)
    with pytest.raises(WorkerStartError) as e:
        await client.start()
    assert e.value.reason == "Python interpreter not found: /nonexistent/bin/python3"
    r = assert_valid(await client.run(fn_class("good_functions.py", "MyReLU"), timeout=10))
    assert (r["status"], r["verdict"]) == ("error", "worker_unavailable")
    assert r["summary"] == "✗ Python interpreter not found: /nonexistent/bin/python3"
    await client.close()


async def test_torch_not_installed(tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(str(env_dir))
    python = str(env_dir / "bin" / "python")
    client = WorkerClient(python, FIXTURES)
    r = assert_valid(await client.run(fn_class("good_functions.py", "MyReLU"), timeout=30))
    assert (r["status"], r["verdict"]) == ("error", "worker_unavailable")
    assert r["summary"] == "✗ torch is not installed in %s" % python
    await client.close()


def _python38():
    for pattern in ("/root/.pyenv/versions/3.8*/bin/python3.8", "/usr/bin/python3.8", "/usr/local/bin/python3.8"):
        found = sorted(glob.glob(pattern))
        if found:
            return found[0]
    return None


@pytest.mark.skipif(_python38() is None, reason="no Python 3.8 interpreter here")
async def test_worker_starts_under_python_38():
    """The worker parses and reports cleanly on the oldest Python it supports."""
    python = _python38()
    client = WorkerClient(python, FIXTURES)
    with pytest.raises(WorkerStartError) as e:
        await client.start()
    # (no torch there: but it got as far as importing torch, so the file is valid 3.8)
    assert e.value.reason in ("torch is not installed in %s" % python,)
    await client.close()


async def test_missing_workspace_folder():
    client = WorkerClient(PYTHON, "/nonexistent/workspace")
    with pytest.raises(WorkerStartError, match="workspace folder not found"):
        await client.start()


def _our_workers():
    """Pids of worker processes that this test process started."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                cmd = f.read().split(b"\0")
            with open("/proc/%s/stat" % d) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if ppid == os.getpid() and any(c.endswith(b"gradlint/worker/__main__.py") for c in cmd):
            found.append(int(d))
    return found


async def test_close_while_starting_leaves_no_process():
    client = WorkerClient(PYTHON, FIXTURES)
    task = asyncio.ensure_future(client.run(fn_class("good_functions.py", "MyReLU"), timeout=30))
    deadline = time.monotonic() + 10
    while not _our_workers():
        assert time.monotonic() < deadline
        await asyncio.sleep(0.01)
    (pid,) = _our_workers()
    await client.close()
    r = assert_valid(await asyncio.wait_for(task, 10))
    assert r["status"] == "cancelled"
    assert await wait_dead(pid)


# --- one worker for the rest: kill it, hang it, close it ------------------------------


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client():
    c = WorkerClient(PYTHON, FIXTURES, max_parallel=2, grace=1.0)
    await c.start()
    try:
        yield c
    finally:
        await c.close()


@pytest.mark.asyncio(loop_scope="module")
async def test_ping(client):
    assert await client.ping() < 5


@pytest.mark.asyncio(loop_scope="module")
async def test_killed_worker_is_restarted(client):
    zygote = client.pid
    task = asyncio.ensure_future(client.run(func("faults.py", "forever", inputs=EXPR), timeout=60))
    child = await wait_for_child(client)
    os.kill(zygote, signal.SIGKILL)
    r = assert_valid(await asyncio.wait_for(task, 10))
    assert r["status"] == "crash"
    assert r["summary"] == "✗ crashed: the gradcheck worker (pid %d) was killed by SIGKILL" % zygote
    assert await wait_dead(child)  # PR_SET_PDEATHSIG / process group kill
    restarts = client.restarts
    r = assert_valid(await client.run(fn_class("good_functions.py", "MyReLU"), timeout=60))
    assert r["status"] == "pass"
    assert client.pid not in (None, zygote)
    assert client.restarts == restarts + 1


@pytest.mark.asyncio(loop_scope="module")
async def test_hung_worker_is_killed_by_the_watchdog(client):
    zygote = client.pid
    os.kill(zygote, signal.SIGSTOP)  # the worker can no longer answer
    try:
        r = assert_valid(await client.run(fn_class("good_functions.py", "MyReLU"), timeout=1.0))
        assert r["status"] == "timeout"
        assert "stopped answering" in r["summary"]  # (the watchdog's verdict: no clock needed)
        assert await wait_dead(zygote)
    finally:
        if alive(zygote):
            os.kill(zygote, signal.SIGKILL)
    info = await client.restart()  # (a run would restart it too)
    assert info.pid == client.pid != zygote
    r = assert_valid(await client.run(fn_class("good_functions.py", "MyReLU"), timeout=60))
    assert r["status"] == "pass"
    assert r["environment"]["pid"] != info.pid  # ran in a forked child


@pytest.mark.asyncio(loop_scope="module")
async def test_close_leaves_no_processes(client):
    zygote = client.pid
    task = asyncio.ensure_future(client.run(func("faults.py", "forever", inputs=EXPR), timeout=60))
    child = await wait_for_child(client)
    assert alive(zygote) and alive(child)
    await client.close()
    r = assert_valid(await asyncio.wait_for(task, 5))
    assert r["status"] == "cancelled"
    assert not alive(zygote)
    assert await wait_dead(child)
    with pytest.raises(RuntimeError):
        await client.run(fn_class("good_functions.py", "MyReLU"))


# --- the synchronous wrapper for the CLI ---------------------------------------------


def test_run_sync():
    seen = []
    results = run_sync(
        [fn_class("good_functions.py", "MyReLU"), fn_class("bad_functions.py", "ScaleWrong")],
        python=PYTHON, cwd=FIXTURES, timeout=60, on_progress=lambda i, m, p: seen.append(i),
    )
    assert [r.status for r in results] == ["pass", "fail"]
    assert set(seen) == {0, 1}
