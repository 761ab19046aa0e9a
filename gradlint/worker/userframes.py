"""Which frames are the user's code: for tracebacks, crash dumps and locations."""

import os
import re

WORKER_DIR = os.path.dirname(os.path.realpath(os.path.abspath(__file__)))

_REALPATHS = {}


def realpath(path):
    r = _REALPATHS.get(path)
    if r is None:
        r = os.path.realpath(path)
        _REALPATHS[path] = r
    return r


def is_user_file(path, roots):
    if not path or path.startswith("<"):
        return False
    rp = realpath(path)
    if rp == WORKER_DIR or rp.startswith(WORKER_DIR + os.sep):
        return False
    parts = rp.split(os.sep)
    if "site-packages" in parts or "dist-packages" in parts:
        return False
    for root in roots:
        if rp == root or rp.startswith(root.rstrip(os.sep) + os.sep):
            return True
    return False


def user_roots(req):
    roots = []
    mod = (req.get("module") or {}).get("path")
    if mod:
        roots.append(realpath(os.path.dirname(os.path.abspath(mod))))
    for p in (req.get("user_roots") or []) + list(req.get("sys_path") or []):
        if isinstance(p, str) and p:
            rp = realpath(os.path.abspath(p))
            if rp not in roots:
                roots.append(rp)
    return roots


def source_line(path, line):
    import linecache

    try:
        return linecache.getline(path, line).strip() or None
    except Exception:
        return None


_FRAME = re.compile(r'^\s+File "(.*)", line (\d+) in (.*)$')


def parse_faulthandler(text, roots):
    """Frames of the crashing thread from a faulthandler dump, most recent first."""
    start = text.rfind("Fatal Python error")
    if start < 0:
        return None, []
    block = text[start:]
    headline = block.splitlines()[0].strip()
    frames = []
    in_thread = False
    for line in block.splitlines()[1:]:
        if line.startswith("Current thread") or (line.startswith("Thread 0x") and not frames):
            in_thread = line.startswith("Current thread")
            continue
        if not in_thread:
            continue
        m = _FRAME.match(line)
        if m:
            frames.append({"file": m.group(1), "line": int(m.group(2)), "function": m.group(3).strip()})
        elif frames:
            break
    user = []
    for f in frames:
        if is_user_file(f["file"], roots):
            f = dict(f)
            f["code"] = source_line(f["file"], f["line"])
            user.append(f)
    return headline, user
