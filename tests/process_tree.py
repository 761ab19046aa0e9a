"""Finding every process a test started, wherever it ended up in the process tree.

A test starts its server, CLI or worker with a unique token in the environment. Forks
inherit it (``/proc/PID/environ`` is the environment the process was started with), so
the token finds a daemon that called ``setsid()`` and was re-parented to init just as
well as the worker itself, and never an unrelated process that reused a pid.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path

VARIABLE = "GRADLINT_TEST_TOKEN"


def new_token() -> str:
    return f"gradlint-test-{uuid.uuid4().hex}"


def tagged_env(token: str, **extra: str) -> dict[str, str]:
    return {**os.environ, VARIABLE: token, **extra}


def tagged(token: str) -> list[int]:
    """Live (not zombie) processes started with ``token`` in their environment."""
    needle = f"{VARIABLE}={token}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle not in (entry / "environ").read_bytes():
                continue
            stat = (entry / "stat").read_bytes()
        except OSError:
            continue
        if stat[stat.rfind(b")") + 2:][:1] not in (b"Z", b"X"):
            found.append(int(entry.name))
    return found


def wait_untagged(token: str, timeout: float = 5.0, keep: int = 0) -> list[int]:
    """Wait until at most ``keep`` tagged processes are left; returns those left."""
    deadline = time.monotonic() + timeout
    while True:
        left = tagged(token)
        if len(left) <= keep or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def kill_tagged(token: str) -> None:
    """Clean up after a failed test: no tagged process may outlive it."""
    for _ in range(50):
        pids = tagged(token)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.02)


def recorded_pids(path: Path) -> list[int]:
    """Pids the fault fixtures wrote into $GRADLINT_TEST_PIDS (``kind pid`` lines)."""
    try:
        return [int(line.split()[1]) for line in path.read_text().splitlines() if line.strip()]
    except FileNotFoundError:
        return []
