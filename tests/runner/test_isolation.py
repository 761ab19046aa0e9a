"""The supervisor never imports torch; the worker is one standalone stdlib+torch file."""
import ast
import os
import subprocess
import sys

import gradlint.runner
from gradlint.runner import protocol

WORKER = protocol.worker_path()
RUNNER_DIR = os.path.dirname(gradlint.runner.__file__)


def test_importing_and_using_the_runner_does_not_import_torch():
    code = (
        "import sys, asyncio\n"
        "import gradlint.runner, gradlint.runner.client, gradlint.runner.protocol\n"
        "from gradlint.runner import WorkerClient, make_request, make_result, run_sync\n"
        "c = WorkerClient('/nonexistent/python', '.')\n"
        "r = asyncio.run(c.run(make_request(__file__ if '__file__' in dir() else 'x.py',"
        " {'kind': 'callable', 'qualname': 'f'}), timeout=1))\n"
        "assert r['verdict'] == 'worker_unavailable', r\n"
        "bad = sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.'))\n"
        "print(bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _worker_tree():
    with open(WORKER) as f:
        return ast.parse(f.read(), filename=WORKER, feature_version=(3, 8))  # Python 3.8 grammar


def _constants(tree, names):
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if node.targets[0].id in names:
                out[node.targets[0].id] = ast.literal_eval(node.value)
    return out


def test_worker_constants_match_the_protocol_module():
    names = ("PROTOCOL_VERSION", "SCHEMA_ID", "SCHEMA_VERSION", "STATUSES", "VERDICTS")
    consts = _constants(_worker_tree(), names)
    for name in names:
        assert consts[name] == getattr(protocol, name), name
    # DEFAULT_LIMITS is written with ** in the worker: compare the evaluated numbers
    tree = _worker_tree()
    node = next(n for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "DEFAULT_LIMITS")
    assert eval(compile(ast.Expression(node.value), WORKER, "eval"), {}) == protocol.DEFAULT_LIMITS


def test_worker_imports_only_stdlib_and_torch():
    stdlib = set(sys.stdlib_module_names)
    for node in ast.walk(_worker_tree()):
        if isinstance(node, ast.Import):
            roots = [a.name.split(".")[0] for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "relative import in the worker"
            roots = [node.module.split(".")[0]]
        else:
            continue
        for root in roots:
            assert root in stdlib or root == "torch", root


def test_runner_does_not_print_or_read_environment_settings():
    for name in os.listdir(RUNNER_DIR):
        if not name.endswith(".py"):
            continue
        tree = ast.parse(open(os.path.join(RUNNER_DIR, name)).read())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id not in ("print", "input"), (name, node.lineno)
            if isinstance(node, ast.Attribute):
                assert node.attr not in ("environ", "getenv"), (name, node.lineno)
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                assert not any(m.split(".")[0] == "torch" for m in mods), (name, node.lineno)
