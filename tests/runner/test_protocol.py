"""The worker's wire protocol, spoken directly (no supervisor in between)."""
import json
import os
import select
import subprocess
import time

from _runner_util import FIXTURES, PYTHON, func
from gradlint.runner import PROTOCOL_VERSION, worker_path


class Wire:
    def __init__(self):
        self.proc = subprocess.Popen(
            [PYTHON, "-u", worker_path()], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, cwd=FIXTURES, start_new_session=True,
        )
        self.buf = b""

    def send(self, msg):
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()

    def recv(self, timeout=60.0):
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            assert left > 0, "no event from the worker"
            if select.select([fd], [], [], left)[0]:
                chunk = os.read(fd, 65536)
                if not chunk:
                    return None
                self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def until(self, event, rid=None):
        seen = []
        while True:
            ev = self.recv()
            assert ev is not None, "worker closed its output; saw %r" % seen
            seen.append(ev)
            if ev["event"] == event and (rid is None or ev.get("id") == rid):
                return ev, seen


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


def test_wire_protocol_and_exit_on_eof():
    w = Wire()
    try:
        ready = w.recv()
        assert ready["event"] == "ready"
        assert ready["protocol"] == PROTOCOL_VERSION and ready["pid"] == w.proc.pid
        assert ready["torch"].startswith("2.") and ready["python"].count(".") == 2

        w.send({"op": "ping"})
        assert w.recv()["event"] == "pong"

        # user output (print) never reaches the protocol stream
        run = func("faults.py", "prints_then_ok")
        run.update(op="run", id="a")
        w.send(run)
        result, seen = w.until("result", "a")
        kinds = [e["event"] for e in seen]
        assert kinds[0] == "started" and "progress" in kinds
        assert all(e.get("id") == "a" for e in seen)
        assert result["result"]["status"] == "pass"
        assert "hello from user code" in result["result"]["stderr_tail"]

        w.send({"op": "bogus"})
        assert w.recv()["event"] == "protocol_error"

        # a hanging run, then EOF on the protocol input: the worker exits and kills it
        run = func("faults.py", "forever", inputs={"kind": "expression", "source": "torch.ones(2, requires_grad=True)"})
        run.update(op="run", id="b")
        w.send(run)
        started, _ = w.until("started", "b")
        child = started["pid"]
        assert alive(child)
        w.proc.stdin.close()
        assert w.proc.wait(timeout=300) == 0  # (timeouts here are safety nets against a hang)
        deadline = time.monotonic() + 300
        while alive(child):
            assert time.monotonic() < deadline, "child survived the worker"
            time.sleep(0.02)
    finally:
        if w.proc.poll() is None:
            os.killpg(w.proc.pid, 9)
            w.proc.wait()
