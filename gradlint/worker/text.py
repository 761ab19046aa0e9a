"""Short text for summaries: numbers, indices, exceptions, signals, byte counts."""

import signal


def fmt(v):
    """Short number formatting for summaries."""
    if isinstance(v, str):
        return v
    if v is None:
        return "?"
    if v != v:
        return "nan"
    if v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    if v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return "%.4g" % v


def scalar_fmt(v):
    """A complex value stored as [re, im] shows as a+bj."""
    if isinstance(v, list) and len(v) == 2:
        return "%s%+gj" % (fmt(v[0]), v[1])
    return v


def idx(index):
    return "[" + ", ".join(str(i) for i in index) + "]"


def first_line(text):
    text = (text or "").strip()
    return text.splitlines()[0] if text else ""


def exc_text(exc, limit=2000):
    msg = str(exc)
    if len(msg) > limit:
        msg = msg[:limit] + "…"
    return msg


def exc_type(exc):
    t = type(exc)
    mod = t.__module__
    if mod in ("builtins", "__main__") or not mod:
        return t.__qualname__
    return mod + "." + t.__qualname__


def signal_name(num):
    try:
        name = signal.Signals(num).name
    except ValueError:
        name = "signal %d" % num
    try:
        desc = signal.strsignal(num)
    except (ValueError, AttributeError):
        desc = None
    return name, desc


def nbytes(n):
    if not n:
        return "0 B"
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return ("%d %s" if n == int(n) else "%.1f %s") % (n, unit)
        n /= 1024.0
