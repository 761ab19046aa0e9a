"""How long does the language server take to stop in the middle of a gradcheck run?

    python benchmarks/bench_lifecycle.py [--repeat N]

For each way an editor stops a server (the `shutdown` request then `exit`, `exit` alone,
stdin closing, SIGTERM), starts `gradlint lsp`, starts a run whose code never returns,
stops the server and times how long the process takes to end. Baseline: the same stop
of an idle server (no worker), measured in the same run. Prints the medians, their ratio,
the exit codes and how many processes started from the server were left (target: ends
within 1 s, no process left).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

OPS = """\
import time

import torch


# gradlint: inputs=(torch.ones(2, dtype=torch.float64, requires_grad=True),)
class Forever(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        while True:
            time.sleep(0.01)

    @staticmethod
    def backward(ctx, grad):
        return grad
"""
MODES = ("shutdown", "exit", "eof", "sigterm")


def _tagged(token: str) -> int:
    count = 0
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and token.encode() in (entry / "environ").read_bytes():
                stat = (entry / "stat").read_bytes()
                count += stat[stat.rfind(b")") + 2:][:1] != b"Z"
        except OSError:
            pass
    return count


def _send(process, message):
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    process.stdin.flush()


def _replies(process, seen: list) -> None:
    stream = process.stdout
    while True:
        length = None
        while True:
            line = stream.readline()
            if not line:
                return
            if not line.strip():
                break
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        seen.append(json.loads(stream.read(length)))


def _wait_reply(seen: list, msg_id: int) -> None:
    deadline = time.monotonic() + 120
    while not any(m.get("id") == msg_id and "method" not in m for m in seen):
        if time.monotonic() > deadline:
            raise SystemExit(f"no reply to {msg_id}")
        time.sleep(0.005)


def stop_once(mode: str, with_run: bool) -> tuple[float, int, int]:
    root = Path(tempfile.mkdtemp(prefix="gradlint-bench-"))
    (root / "ops.py").write_text(OPS)
    token = uuid.uuid4().hex
    gradlint = str(Path(sys.executable).parent / "gradlint")
    process = subprocess.Popen([gradlint, "lsp"], cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, env={**os.environ, "GRADLINT_BENCH": token})
    seen: list = []
    threading.Thread(target=_replies, args=(process, seen), daemon=True).start()
    _send(process, {"id": 1, "method": "initialize", "params": {
        "processId": None, "rootUri": root.as_uri(), "capabilities": {},
        "initializationOptions": {"workspaceTrusted": True}}})
    _wait_reply(seen, 1)
    _send(process, {"method": "initialized", "params": {}})
    if with_run:
        uri = (root / "ops.py").as_uri()
        _send(process, {"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": OPS}}})
        _send(process, {"id": 2, "method": "workspace/executeCommand", "params": {
            "command": "gradlint.runGradcheck", "arguments": [{"uri": uri, "position": {"line": 6, "character": 6}}]}})
        while _tagged(token) < 3:  # the server, the worker, the run
            time.sleep(0.02)
        time.sleep(0.5)
    started = time.perf_counter()
    if mode == "shutdown":
        _send(process, {"id": 3, "method": "shutdown"})
        _wait_reply(seen, 3)
        _send(process, {"method": "exit"})
    elif mode == "exit":
        _send(process, {"method": "exit"})
    elif mode == "eof":
        process.stdin.close()
    else:
        process.send_signal(signal.SIGTERM)
    code = process.wait(timeout=120)
    took = time.perf_counter() - started
    return took, code, _tagged(token)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'stop':<10}{'idle s':>9}{'mid-run s':>11}{'ratio':>8}{'exit code':>11}{'left':>6}")
    for mode in MODES:
        idle = [stop_once(mode, False)[0] for _ in range(args.repeat)]
        runs = [stop_once(mode, True) for _ in range(args.repeat)]
        busy = statistics.median(t for t, _, _ in runs)
        codes = sorted({c for _, c, _ in runs})
        left = max(n for _, _, n in runs)
        print(f"{mode:<10}{statistics.median(idle):>9.2f}{busy:>11.2f}{busy / statistics.median(idle):>8.1f}"
              f"{','.join(map(str, codes)):>11}{left:>6}")


if __name__ == "__main__":
    main()
