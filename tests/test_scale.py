"""The speed-ups change nothing but speed: the same findings with every shortcut off, a
cache that is never trusted when stale or damaged, shards that cover everything once."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from gradlint.analysis import traverse
from gradlint.analysis.source import rescan, scan
from gradlint.engine.batch import in_shard, parse_shard, shard_of
from gradlint.engine.blocks import BlockCache
from gradlint.engine.check_cache import FORMAT
from gradlint.engine.files import UsageError
from gradlint.engine.linter import LintCache, LintCancelled, lint_source
from gradlint.engine.options import ALL_CODES, LintOptions
from gradlint.rules import ALL_RULES, RULES_BY_CODE
from gradlint.rules.examples import all_examples
from gradlint.engine.required_text import may_match, required_literals
from gradlint.server.documents import Document

ROOT = Path(__file__).resolve().parent.parent


def gradlint_command() -> list[str]:
    return [str(Path(sys.executable).parent / "gradlint")]

sys.path.insert(0, str(ROOT / "benchmarks"))
from autograd_corpus import module  # noqa: E402

TORCH = Path(__import__("importlib.util").util.find_spec("torch").origin).parent


def _corpus() -> list[tuple[str, str]]:
    """Real and generated code with Functions, gradcheck calls and findings."""
    texts = [(str(p), p.read_text()) for p in sorted((ROOT / "examples").rglob("*.py"))]
    fixtures = ROOT / "tests" / "fixtures"
    texts += [(str(p), p.read_text()) for p in sorted(fixtures.rglob("*.py"))
              if not p.is_relative_to(fixtures / "rules")]  # the rules' examples come below
    for directory in ("nn/parallel", "nn/utils/_expanded_weights"):
        texts += [(str(p), p.read_text()) for p in sorted((TORCH / directory).rglob("*.py"))]
    for name in ("nn/modules/_functions.py", "autograd/function.py", "autograd/__init__.py",
                 "utils/checkpoint.py", "nn/modules/linear.py",
                 # custom ops and torch.func (GL030-GL044) in real code; the first two hold
                 # findings (GL037, GL004), the others Functions under transforms and ops
                 "sparse/semi_structured.py", "distributed/tensor/_redistribute.py",
                 "testing/_internal/autograd_function_db.py", "testing/_internal/custom_op_db.py",
                 "_library/autograd.py", "_functorch/autograd_function.py"):
        texts.append((name, (TORCH / name).read_text()))
    texts.append(("generated.py", module(600)))
    # a transform bound under another name in another block (found through the binding)
    texts.append(("alias.py", TRANSFORM_ALIAS))
    for rule in ALL_RULES:  # every example: the class's and the fixtures' (tests/fixtures/rules)
        for index, example in enumerate(all_examples(rule)):
            code = textwrap.dedent(example.code).lstrip("\n")
            texts.append((f"{rule.code}-{index}.py", code))
            # with unrelated code around it, only part of the file is parsed (needed_blocks)
            texts.append((f"{rule.code}-{index}-padded.py", code + PADDING))
    return texts


PADDING = "".join(f"\n\ndef unrelated_{i}(value, scale=2):\n    return value * scale + {i}\n"
                  for i in range(10))


TRANSFORM_ALIAS = """\
import torch
from torch import func


class Fn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


grad_of = func.grad


def loss(x):
    return Fn.apply(x).sum()


grad_of(loss)(torch.ones(3))
"""


def test_same_findings_with_every_speed_up_off():
    checked = parsed_in_part = 0
    codes: set[str] = set()
    for name, text in _corpus():
        cache = LintCache()
        fast = lint_source(text, name, cache=cache).findings
        reference = lint_source(text, name, exhaustive=True).findings
        assert fast == reference, name
        checked += bool(reference)
        codes.update(f.code for f in reference)
        if name.endswith("-padded.py") and reference:
            parsed_in_part += len(cache.blocks) < len(scan(text).blocks)
    assert checked > 40  # the corpus has findings to compare
    assert parsed_in_part > 40  # ...also where only part of the file is parsed
    # every rule's findings are compared (each rule's INVALID examples are in the corpus)
    assert codes >= {rule.code for rule in ALL_RULES if rule.INVALID and not rule.engine_level}


def test_parallel_cached_cli_run_equals_sequential_uncached(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    for index in range(12):
        (tree / f"ops_{index}.py").write_text(module(150 + 40 * index))
    (tree / "broken.py").write_text("import torch\ndef f(:\n")
    base = [*gradlint_command(), "check", "--format", "json", "--exit-zero"]

    def run(*extra: str) -> list:
        out = subprocess.run([*base, *extra, str(tree)], capture_output=True, text=True, cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    reference = run("--no-cache", "-j", "1")
    assert reference and any(f["code"] == "GL000" for f in reference)
    assert run("-j", "2", "--cache-dir", str(tmp_path / "c")) == reference  # cold, parallel
    assert run("-j", "2", "--cache-dir", str(tmp_path / "c")) == reference  # answered from the cache


def test_fast_visit_calls_the_hooks_of_libcst_visit_in_the_same_order():
    class Recorder(cst.CSTVisitor):
        def __init__(self):
            self.events = []

        def on_visit(self, node):
            self.events.append(("enter", type(node).__name__, id(node)))
            return not isinstance(node, cst.Lambda)  # skipping children is honoured too

        def on_leave(self, node):
            self.events.append(("leave", type(node).__name__, id(node)))

    class Hooks(cst.CSTVisitor):
        def __init__(self):
            self.events = []

        def visit_Call(self, node):
            self.events.append(("call", id(node)))

        def visit_FunctionDef(self, node):
            self.events.append(("def", id(node)))
            return node.name.value != "skip"

        def leave_Name(self, node):
            self.events.append(("name", id(node)))

    tree = cst.parse_module(module(120) + "\ndef skip():\n    f(x)\nx = f'{a!r:>{w}}' + (lambda y: g(y))(1)\n")
    for kind in (Recorder, Hooks):
        fast, slow = kind(), kind()
        traverse.visit(tree, fast)
        with traverse.libcst_traversal():
            traverse.visit(tree, slow)
        assert fast.events == slow.events and fast.events
    assert traverse.children(tree.body[0]) == list(tree.body[0].children)


def test_rule_codes_are_known_without_importing_the_rules():
    assert ALL_CODES == tuple(sorted(RULES_BY_CODE))


@pytest.mark.parametrize("rule", [r for r in ALL_RULES if r.requires is not None], ids=lambda r: r.code)
def test_literal_pre_checks_never_reject_a_match(rule):
    needles, folded = required_literals(rule.requires)
    assert needles, f"{rule.code}: its pre-check requires no literal text, so every file runs its regex"
    texts = [e.code for e in all_examples(rule)] + [text for _, text in _corpus()[:60]]
    for text in texts:
        assert may_match(rule.requires, text) == (rule.requires.search(text) is not None)
        if rule.requires.search(text):
            haystack = text.lower() if folded else text
            assert any(needle in haystack for needle in needles)


def test_rescan_equals_a_full_scan_after_random_edits():
    random.seed(15)
    pieces = ['"""', "'''", "'", '"', "(", ")", "[", "\n", "\r\n", "\r", "\\\n", "# c\n", "def f():\n",
              "\nclass A:\n", "else:\n", "@d\n", "x", "    ", "\n\n"]
    for text in [module(200), (ROOT / "examples" / "custom_functions.py").read_text()]:
        scanned = scan(text)
        for _ in range(400):
            start = random.randrange(len(text) + 1)
            end = min(len(text), start + random.randrange(30))
            new = text[:start] + random.choice(pieces) * random.randrange(3) + text[end:]
            result = rescan(text, scanned, new)
            assert result == scan(new)
            if random.random() < 0.7:
                text, scanned = new, result


def test_document_line_index_follows_edits():
    random.seed(14)
    for _ in range(500):
        text = "".join(random.choice(["ab", "\n", "\r", "\r\n", " ", "é"]) for _ in range(random.randrange(30)))
        document = Document("file:///x.py", text, 1)
        for _ in range(4):
            start_line = random.randrange(document.line_count)
            end_line = random.randrange(start_line, document.line_count)
            start, end = random.randrange(4), random.randrange(4)
            if start_line == end_line:
                end = max(start, end)
            insert = random.choice(["", "x", "\n", "\r", "\r\n", "a\nb"])
            document.apply_change(insert, (start_line, start), (end_line, end), "utf-16")
            assert document._starts == Document("u", document.text, 1)._starts


def test_block_cache_is_bounded_by_bytes_but_keeps_what_the_current_lint_uses():
    cache = BlockCache(max_bytes=200_000)
    for index in range(300):
        cache.mark()
        cache.get(f"x_{index} = {index}\n" * 20)
        cache.trim()
    assert cache.bytes <= 200_000 and len(cache) < 300
    big = [f"y_{index} = 1\n" * 200 for index in range(40)]  # more than the budget
    for edit in range(3):  # a big document edited: one block changes each time
        cache.mark()
        misses = cache.misses
        for text in big[:20] + [f"edit = {edit}\n"] + big[20:]:
            cache.get(text)
        cache.trim()
        assert cache.misses - misses == (41 if edit == 0 else 1)  # nothing else re-parsed


def test_editing_a_big_file_does_not_grow_the_cache_without_bound():
    cache = LintCache(max_bytes=8 * 2 ** 20)
    text = module(1500)
    for version in range(60):
        text = text.replace(f"norm > {version}", f"norm > {version + 1}", 1) if version else text
        lint_source(text.replace("unit 0)", f"unit 0, v{version})"), "big.py", cache=cache)
    assert cache.blocks.bytes <= 8 * 2 ** 20 * 2 // 3 + 3 * 2 ** 20  # the budget (+ the doc in use)
    assert cache.findings_bytes <= cache.max_findings_bytes


def test_a_lint_can_be_cancelled_and_reports_progress():
    text = module(800)
    with pytest.raises(LintCancelled):
        lint_source(text, "x.py", cancelled=lambda: True)
    early: list = []
    final = lint_source(text, "x.py", progress=early.append, progress_interval=0.0).findings
    assert early and all(set(part) <= set(final) for part in early)
    assert len(early[-1]) <= len(final)


def test_shards_cover_every_file_exactly_once(tmp_path, cli):
    for index in range(30):
        (tmp_path / f"m{index}.py").write_text(module(60).replace("ScaledTanh", f"S{index}_"))
    full = json.loads(cli("check", "--format", "json", "--exit-zero", "--no-cache", ".", cwd=tmp_path).stdout)
    union: list = []
    files_seen: dict[str, int] = {}
    for k in range(1, 5):
        out = cli("check", "--format", "json", "--exit-zero", "--no-cache", "--shard", f"{k}/4", ".",
                  cwd=tmp_path)
        part = json.loads(out.stdout)
        union += part
        for path in {f["path"] for f in part}:
            files_seen[path] = files_seen.get(path, 0) + 1
    assert sorted(json.dumps(f, sort_keys=True) for f in union) == \
        sorted(json.dumps(f, sort_keys=True) for f in full)
    assert len(files_seen) == 30 and set(files_seen.values()) == {1}
    names = [f"pkg/m{i}.py" for i in range(1000)]
    for n in (1, 3, 7):
        owners = [[k for k in range(1, n + 1) if in_shard(name, (k, n))] for name in names]
        assert all(len(o) == 1 for o in owners)
    assert shard_of("pkg/a.py", 8) == shard_of("pkg/a.py", 8)  # stable (not hash())
    for bad in ("0/3", "4/3", "1", "a/b", "1/0"):
        with pytest.raises(UsageError):
            parse_shard(bad)


def test_run_shards_cover_every_target_exactly_once(tmp_path, cli):
    import shutil

    project = tmp_path / "project"
    shutil.copytree(ROOT / "tests" / "fixtures" / "run_project", project)

    def targets(*extra: str) -> list[str]:
        result = cli("run", "--format", "json", "--exit-zero", *extra, cwd=project, timeout=600)
        assert result.returncode == 0, result.stderr
        return [item["target"] for item in json.loads(result.stdout)]

    everything = targets()
    parts = [targets("--shard", f"{k}/3") for k in (1, 2, 3)]
    assert len(everything) >= 3
    assert sorted(t for part in parts for t in part) == sorted(everything)


async def test_a_newer_lint_of_the_same_document_supersedes_the_running_one():
    import asyncio

    from gradlint.server.linting import Linter

    linter = Linter()
    old = asyncio.ensure_future(linter.lint(module(3000), "doc.py", LintOptions(), supersede="doc"))
    await asyncio.sleep(0)  # the old lint is handed to the lint thread
    new = await linter.lint(module(300), "doc.py", LintOptions(), supersede="doc")
    assert await old is None  # given up at its next block
    assert new and new == lint_source(module(300), "doc.py").findings
    other = await linter.lint(module(300), "other.py", LintOptions(), supersede="other")
    assert other  # another document is not affected
    linter.shutdown()


def _check_json(cli, directory: Path, cache: Path, *extra: str) -> list:
    result = cli("check", "--format", "json", "--exit-zero", "--cache-dir", str(cache), *extra, ".",
                 cwd=directory)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _entries(cache: Path) -> list[Path]:
    return sorted((cache / "check").rglob("*.json"))


def test_cache_entries_that_are_corrupt_or_stale_are_never_trusted(tmp_path, cli):
    project = tmp_path / "project"
    project.mkdir()
    (project / "ops.py").write_text(module(120))
    (project / "clean.py").write_text("import torch\n\nx = torch.ones(3)\n")
    cache = tmp_path / "cache"
    reference = _check_json(cli, project, cache, "--no-cache")
    assert reference and not _entries(cache)  # --no-cache writes nothing
    assert _check_json(cli, project, cache) == reference
    entries = _entries(cache)
    assert len(entries) == 2
    # damaged in every way a disk or a killed writer could leave it
    damages = [b"", b"\x00\xff garbage", b'{"format": 1', b"[]", b'{"format": 1, "key": 5}']
    for damage in damages:
        for entry in entries:
            entry.write_bytes(damage)
        assert _check_json(cli, project, cache) == reference
        assert all(json.loads(entry.read_text())["findings"] is not None for entry in entries)
    # valid JSON with forged findings but the wrong checksum: ignored
    for entry in entries:
        data = json.loads(entry.read_text())
        data["findings"] = []
        entry.write_text(json.dumps(data))
    assert _check_json(cli, project, cache) == reference
    # stale: the file changed (a finding fixed by hand), or the options did
    (project / "ops.py").write_text(module(120).replace("x = torch.randn(2, requires_grad=True)",
                                                        "x = torch.randn(2, dtype=torch.float64, requires_grad=True)"))
    assert _check_json(cli, project, cache) == _check_json(cli, project, cache, "--no-cache")
    only_gl001 = _check_json(cli, project, cache, "--select", "GL001")
    assert only_gl001 and {f["code"] for f in only_gl001} == {"GL001"}
    assert _check_json(cli, project, cache, "--select", "GL001", "--no-cache") == only_gl001


def test_concurrent_runs_share_the_cache_safely(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    for index in range(8):
        (project / f"ops_{index}.py").write_text(module(100 + 20 * index))
    cache = tmp_path / "cache"
    command = [*gradlint_command(), "check", "--format", "json", "--exit-zero", "-j", "1",
               "--cache-dir", str(cache), "."]
    runs = [subprocess.Popen(command, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            for _ in range(4)]
    outputs = [run.communicate(timeout=600) for run in runs]
    assert all(run.returncode == 0 for run in runs), [err for _, err in outputs]
    first = json.loads(outputs[0][0])
    assert first and all(json.loads(out) == first for out, _ in outputs)
    entries = _entries(cache)
    assert len(entries) == 8 and not list((cache / "check").rglob(".tmp-*"))
    assert all(json.loads(entry.read_text())["format"] == FORMAT for entry in entries)
    again = subprocess.run(command, cwd=project, capture_output=True, text=True)
    assert json.loads(again.stdout) == first


def test_clean_removes_the_cache_and_nothing_else(tmp_path, cli):
    (tmp_path / "ops.py").write_text(module(60))
    assert cli("check", "--exit-zero", ".", cwd=tmp_path).returncode == 0
    assert (tmp_path / ".gradlint_cache" / "CACHEDIR.TAG").is_file()
    assert "Removed" in cli("clean", cwd=tmp_path).stdout
    assert not (tmp_path / ".gradlint_cache").exists() and (tmp_path / "ops.py").is_file()
    other = tmp_path / "not_a_cache"
    other.mkdir()
    (other / "keep.txt").write_text("x")
    assert "No gradlint cache" in cli("clean", "--cache-dir", str(other), cwd=tmp_path).stdout
    assert (other / "keep.txt").is_file()


def test_text_summary_and_notebooks_are_the_same_from_the_cache(tmp_path, cli):
    import shutil

    project = tmp_path / "project"
    shutil.copytree(ROOT / "examples", project)
    shutil.copy(ROOT / "tests" / "fixtures" / "notebooks" / "prototype.ipynb", project)
    cache = tmp_path / "cache"

    def text(*extra: str) -> str:
        result = cli("check", "--no-color", "--cache-dir", str(cache), *extra, ".", cwd=project)
        assert result.returncode == 1, result.stderr
        return result.stdout

    for extra in ((), ("--unsafe-fixes",)):
        reference = text("--no-cache", *extra)
        assert "fixable with `--fix`" in reference and "prototype.ipynb:cell" in reference
        assert text(*extra) == reference  # cold: counts the fixes and writes them
        assert text(*extra) == reference  # answered from the cache
    json_run = _check_json(cli, project, cache)  # a JSON run reads entries a text run wrote
    assert json_run == _check_json(cli, project, cache, "--no-cache")
    assert any(f.get("cell") is not None for f in json_run) or any("cell" in f["path"] for f in json_run)


def test_a_re_run_answered_from_the_cache_never_imports_libcst(tmp_path):
    (tmp_path / "ops.py").write_text(module(120))
    (tmp_path / "plain.py").write_text("import torch\n\nx = torch.ones(3)\n")
    probe = ("import sys; from gradlint.cli.main import main; "
             f"status = main(['check', '--cache-dir', {str(tmp_path / 'c')!r}, {str(tmp_path)!r}]); "
             "print('libcst' in sys.modules, 'gradlint.rules' in sys.modules, status)")

    def run() -> str:
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path)
        return out.stdout.strip().splitlines()[-1]

    assert run() == "True True 1"  # cold: parses ops.py
    assert run() == "False False 1"  # every file answered from the cache


def test_analysis_walks_trees_with_the_fast_visit():
    """``node.visit(visitor)`` rebuilds every node it passes: analysis code calls
    ``traverse.visit`` (tests/test_scale.py checks both walks agree)."""
    import re

    offenders = []
    for directory in ("analysis", "rules", "engine"):
        for path in sorted((ROOT / "gradlint" / directory).rglob("*.py")):
            if path.name == "traverse.py":
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if re.search(r"[\w)\]]\.visit\(", line) and "traverse.visit(" not in line:
                    offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not offenders, offenders
