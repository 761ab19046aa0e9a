"""The supervisor never imports torch; the worker is a standalone stdlib+torch package."""
import ast
import os
import subprocess
import sys

import gradlint.runner
from gradlint.runner import protocol

WORKER_DIR = os.path.dirname(protocol.worker_path())
RUNNER_DIR = os.path.dirname(gradlint.runner.__file__)
WORKER_MODULES = sorted(os.path.join(folder, n) for folder, _dirs, names in os.walk(WORKER_DIR)
                        for n in names if n.endswith(".py"))


def test_importing_and_using_the_runner_does_not_import_torch():
    code = (
        "import sys, asyncio\n"
        "import gradlint.runner, gradlint.runner.client, gradlint.runner.protocol\n"
        "from gradlint.runner import WorkerClient, make_request, make_result, run_sync\n"
        "c = WorkerClient('/nonexistent/python', '.')\n"
        "r = asyncio.run(c.run(make_request(__file__ if '__file__' in dir() else 'x.py',"
        " {'kind': 'callable', 'qualname': 'f'}), timeout=1))\n"
        "assert r.verdict == 'worker_unavailable', r\n"
        "bad = sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.'))\n"
        "print(bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _tree(path):
    with open(path) as f:
        return ast.parse(f.read(), filename=path, feature_version=(3, 8))  # Python 3.8 grammar


def _worker_tree():
    return _tree(os.path.join(WORKER_DIR, "protocol.py"))


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
    assert eval(compile(ast.Expression(node.value), "protocol.py", "eval"), {}) == protocol.DEFAULT_LIMITS


def _worker_module(path):
    """The dotted name of a worker file inside the worker package ('' for its __init__)."""
    parts = os.path.relpath(os.path.splitext(path)[0], WORKER_DIR).split(os.sep)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_worker_imports_only_stdlib_torch_and_itself():
    stdlib = set(sys.stdlib_module_names)
    own = {_worker_module(p) for p in WORKER_MODULES}
    assert len(WORKER_MODULES) > 5
    for path in WORKER_MODULES:
        package = _worker_module(path).split(".")
        if not path.endswith("__init__.py"):
            package = package[:-1]
        package = [p for p in package if p]
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.Import):
                roots = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # a module of the worker package, never gradlint's
                    assert node.level - 1 <= len(package), (path, node.lineno)
                    base = package[:len(package) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                    names = [target] if node.module else [".".join(base + [a.name]) for a in node.names]
                    assert all(n in own for n in names), (path, node.lineno, names)
                    continue
                roots = [node.module.split(".")[0]]
            else:
                continue
            for root in roots:
                assert root in stdlib or root == "torch", (path, root)


def test_worker_runs_without_gradlint_and_shadows_no_user_module(tmp_path):
    """Started as a file, the worker loads itself privately: a user's `checks.py` or `job.py`
    in the working directory is not replaced by the worker's modules, and gradlint need not
    be importable."""
    for name in ("checks", "job", "protocol", "loading"):
        (tmp_path / (name + ".py")).write_text("MARK = %r\n" % name)
    code = (
        "import runpy, sys\n"
        "sys.argv = [%r]\n"
        "sys.modules['gradlint'] = None  # gradlint is not installed in the user's interpreter\n"
        "import importlib.util\n"
        "spec = importlib.util.spec_from_file_location('__main__loader', %r)\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "m._load_private_package()\n"
        "sys.path.insert(0, %r)\n"
        "import checks, job\n"
        "assert checks.MARK == 'checks' and job.MARK == 'job', (checks, job)\n"
        "assert '_gradlint_worker.zygote' in sys.modules\n"
        "print('ok')\n"
    ) % (protocol.worker_path(), protocol.worker_path(), str(tmp_path))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout + proc.stderr


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


def test_every_worker_module_is_listed_in_its_package_docstring():
    """The worker's ``__init__`` (and each subpackage's) names every module it holds."""
    for folder, dirs, names in os.walk(WORKER_DIR):
        if "__init__.py" not in names:
            continue
        doc = ast.get_docstring(_tree(os.path.join(folder, "__init__.py"))) or ""
        own = [os.path.splitext(n)[0] for n in names if n.endswith(".py") and n != "__init__.py"]
        own += [d for d in dirs if os.path.exists(os.path.join(folder, d, "__init__.py"))]
        missing = [m for m in own if "``%s``" % m not in doc]
        assert not missing, (folder, missing)
