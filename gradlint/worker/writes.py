"""Which line of the user's code wrote to an input in place.

A forward (an autograd Function's, a callable's, a custom op's) that changes an input is found
by comparing the input before and after (``checks.check_input_mutation``) or by opcheck's schema
test. To point at the cause, the forward is called once more on fresh inputs while a trace
function watches the inputs' version counters: every in-place write (``x.clamp_()``,
``x[0] = 1``, ``torch.add(x, 1, out=x)``, a write through a view of ``x``, one inside a
helper or inside a custom op's kernel) bumps the counter of the tensor it writes to, and the
counter is read at every line the user's code executes. A counter that moved between two
line events was bumped by the line that ran between them: the innermost line of the user's
code running at the time. Nothing is claimed when no line of the user's code ran before the
counter moved (a write by a library's wrapper around the user's function).

Only the first write to each input is reported. The trace costs one forward call, made only
after a mutation was found.
"""

import io
import sys
import tokenize

from .outcome import Outcome
from .tensors import is_tensor
from .userframes import is_user_file, source_line

LEAF_WRITE = "a leaf Variable that requires grad is being used in an in-place operation"


def find_writes(call, inputs, names, roots):
    """[{input, position, file, line, function, code}]: the first line of the user's code that
    wrote to each input in place, in the order the writes happened. ``call(inputs)`` runs the
    forward; an exception it raises ends the search (writes before it are kept)."""
    watched = [(i, t, t._version) for i, t in enumerate(inputs) if is_tensor(t) and _has_version(t)]
    if not watched:
        return []
    versions = dict((i, v) for i, _, v in watched)
    last = [None]  # (file, line, function) of the newest line event in the user's code
    found = []

    def look():
        for i, t, _ in watched:
            now = t._version
            if now == versions[i]:
                continue
            versions[i] = now
            if last[0] is not None and not any(w["position"] == i for w in found):
                path, line, function = last[0]
                found.append({"input": names[i] if i < len(names) else "input%d" % i, "position": i,
                              "file": path, "line": line, "function": function,
                              "code": code_of(path, line)})

    def local(frame, event, arg):
        if event in ("line", "return"):
            look()
            if event == "line":
                code = frame.f_code
                last[0] = (code.co_filename, frame.f_lineno, getattr(code, "co_qualname", code.co_name))
        return local

    def calls(frame, event, arg):
        if event == "call" and is_user_file(frame.f_code.co_filename, roots):
            look()
            return local
        return None

    previous = sys.gettrace()
    sys.settrace(calls)
    try:
        call(inputs)
    except Exception:  # noqa: BLE001 - the writes before it still count
        pass
    finally:
        sys.settrace(previous)
    look()
    return found


def code_of(path, line):
    """The source line, without its comment (None when unreadable)."""
    code = source_line(path, line)
    if not code:
        return code
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type == tokenize.COMMENT:
                return code[:token.start[1]].rstrip() or code
    except (tokenize.TokenError, SyntaxError):  # a line of a longer statement
        pass
    return code


def _has_version(t):
    try:
        t._version
    except Exception:  # noqa: BLE001 - tensors without a version counter (some subclasses)
        return False
    return True


def write_location(write):
    """A result ``location`` for a write found by ``find_writes``."""
    return {"file": write["file"], "line": write["line"], "function": write["function"],
            "reason": "writes to %s" % write["input"]}


def writes_to_leaf(exc):
    """torch's error for an in-place write to an input that requires grad (outside an autograd
    Function's forward, which runs without grad)."""
    return isinstance(exc, RuntimeError) and LEAF_WRITE in str(exc)


def leaf_write_outcome(exc, reporter, attempts):
    """``input_mutated`` for a forward that raised ``writes_to_leaf`` on every input set tried: the
    code writes to its input, whatever the input (not an input the search failed to find). Its
    location is the line that wrote (the innermost frame of the user's code)."""
    frames = reporter.user_frames(exc)
    summary = "✗ forward modifies an input that requires grad in place"
    location = None
    if frames:
        frame = frames[-1]
        code = code_of(frame["file"], frame["line"])
        if code:
            summary += ": `%s` (line %d)" % (code, frame["line"])
        location = {"file": frame["file"], "line": frame["line"], "function": frame["function"],
                    "reason": "raised here"}
    if reporter.op_locations:
        fix = ("A custom op declares the inputs it writes (mutates_args, or `Tensor(a!)` in its schema); an op "
               "that mutates cannot have a registered backward: write into a new tensor and return it.")
    else:
        fix = ("gradcheck perturbs inputs and re-runs forward; a forward that changes its inputs makes the "
               "numerical Jacobian meaningless. Work on a copy (x = x.clone()).")
    return Outcome("fail", "input_mutated", summary, "RuntimeError: %s (on each of the %d input sets tried)\n%s"
                   % (LEAF_WRITE, attempts, fix), location=location or reporter.location_for("forward"))
