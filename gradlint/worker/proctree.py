"""Every process a run started, however it hid, and killing them all.

User code may start processes that leave the run's process group: ``setsid()`` in a
child, a daemonising double fork, a fork bomb in a session of its own. Killing the
run's process group misses them. So, on Linux:

- the zygote and each run child are *child subreapers* (``PR_SET_CHILD_SUBREAPER``): a
  process orphaned below them is re-parented to them, not to init, and stays in the tree;
- ``kill_tree`` kills the whole tree below a process, found through ``/proc``, pass after
  pass until a scan finds nothing (processes forked between a scan and a kill are
  orphaned onto the subreaper and found by the next pass).

Elsewhere (macOS: no /proc, no prctl) nothing here finds processes, and the callers
fall back on killing process groups. This module is stdlib only and keeps to Python 3.8:
it runs in the user's interpreter (the zygote, the run child), and the supervisor
(``gradlint.runner``) imports it too.
"""

import os
import signal
import time

PR_SET_CHILD_SUBREAPER = 36
_PROC = "/proc"


def subreaper():
    """Make this process a child subreaper; True when the kernel accepted it."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        prctl = getattr(libc, "prctl", None)
        if prctl is None:
            return False
        return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except Exception:
        return False


def available():
    """Can processes be found through /proc here?"""
    return os.path.isdir(os.path.join(_PROC, "self", "task"))


def _parents():
    """pid -> parent pid of every live process (zombies left out: they cannot fork)."""
    parents = {}
    try:
        names = os.listdir(_PROC)
    except OSError:
        return parents
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(os.path.join(_PROC, name, "stat"), "rb") as f:
                stat = f.read()
        except OSError:  # gone meanwhile
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) < 2 or fields[0] in (b"Z", b"X"):
            continue
        parents[int(name)] = int(fields[1])
    return parents


def descendants(root, spare=()):
    """Live processes below ``root`` (not ``root`` itself), parents before children.
    The subtrees of the pids in ``spare`` are left out."""
    children = {}
    for pid, parent in _parents().items():
        children.setdefault(parent, []).append(pid)
    spare = set(spare)
    found = []
    queue = [root]
    while queue:
        for child in children.get(queue.pop(0), ()):
            if child in spare:
                continue
            found.append(child)
            queue.append(child)
    return found


def _signal(pid, sig):
    try:
        os.kill(pid, sig)
        return True
    except OSError:
        return False


def kill_tree(root, spare=(), include_root=False, deadline_s=5.0, reap=None):
    """SIGKILL every process below ``root`` (and ``root`` itself last when
    ``include_root``), except the subtrees of ``spare``. Returns how many were killed.

    ``root`` must be this process or a stopped/subreaper ancestor of the tree, so that
    processes orphaned during the kill stay below it. ``reap`` (optional) is called
    between passes to collect the zombies that are this process's own children.
    """
    killed = 0
    if available():
        end = time.monotonic() + deadline_s
        while True:
            found = descendants(root, spare)
            if not found:
                break
            for pid in found:
                if _signal(pid, signal.SIGKILL):
                    killed += 1
            if reap is not None:
                reap()
            if time.monotonic() > end:
                break
    if include_root and _signal(root, signal.SIGKILL):
        killed += 1
    return killed


def stop_and_kill_tree(root, deadline_s=5.0):
    """Kill ``root`` and everything below it, from outside: ``root`` is stopped first (it
    can fork nothing more, and as a subreaper it still adopts orphans), its tree is
    killed, then ``root``. Returns how many processes were killed."""
    _signal(root, signal.SIGSTOP)
    return kill_tree(root, include_root=True, deadline_s=deadline_s)
