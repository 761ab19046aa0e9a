"""The pre-commit hooks (.pre-commit-hooks.yaml), run by pre-commit itself on throwaway git
repositories, the way a user's `.pre-commit-config.yaml` would use them.

pre-commit installs the `gradlint` hook into an environment of its own from a git
repository: a snapshot of this checkout (committed in a temporary repository) serves as
that repository, and its environment is built once for the whole session.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest
import yaml
from nbformat.v4 import new_code_cell, new_notebook

from readme_release import MISSING_TAG, clone_with_tags, pre_commit_config, pre_commit_rev, tag_commit, tree_size

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
PRE_COMMIT_CI_LIMIT = 250 * 2 ** 20  # pre-commit.ci's free tier, per hook environment

FLOAT32 = textwrap.dedent("""\
    import torch
    from torch.autograd import gradcheck


    def test_sin():
        x = torch.randn(3, requires_grad=True)
        assert gradcheck(torch.sin, (x,))
    """)

WRONG_BACKWARD = textwrap.dedent("""\
    import torch


    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, grad):
            x, = ctx.saved_tensors
            return 2 * x * grad
    """)

RIGHT_BACKWARD = WRONG_BACKWARD.replace("2 * x * grad", "3 * x ** 2 * grad")

NEW_MISTAKE = textwrap.dedent("""\


    def test_cos():
        y = torch.randn(3, requires_grad=True)
        assert gradcheck(torch.cos, (y,))
    """)


def status(output: str, hook: str) -> str:
    """What pre-commit printed for a hook: Passed, Failed or `(no files to check)Skipped`."""
    match = re.search(rf"^{re.escape(hook)}\.+(.*)$", output, re.MULTILINE)
    assert match, output
    return match.group(1)


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture(scope="session")
def hooks_repo(tmp_path_factory) -> tuple[Path, str]:
    """This checkout as the git repository pre-commit installs the hooks from."""
    repo = tmp_path_factory.mktemp("gradlint-hooks")
    listed = git(ROOT, "ls-files", "--cached", "--others", "--exclude-standard").splitlines()
    for name in listed:  # the checkout as it is now, uncommitted changes included
        source = ROOT / name
        if name.startswith("vscode-extension/") or not source.is_file():
            continue
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, repo / name)
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "snapshot")
    return repo, git(repo, "rev-parse", "HEAD")


@pytest.fixture(scope="session")
def pre_commit_home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("pre-commit-home")


class Project:
    """A git repository with a .pre-commit-config.yaml using the hooks of this checkout."""

    def __init__(self, path: Path, hooks: tuple[Path, str], home: Path):
        path.mkdir(exist_ok=True)
        self.path = path
        self.hooks_path, self.rev = hooks
        self.home = home
        git(path, "init", "-q")

    def __truediv__(self, name: str) -> Path:
        return self.path / name

    def configure(self, *hooks: dict) -> None:
        config = {"repos": [{"repo": str(self.hooks_path), "rev": self.rev, "hooks": list(hooks)}]}
        self.write_config(config)

    def write_config(self, config: dict) -> None:
        (self.path / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))

    def hook_environments(self) -> list[Path]:
        """The environments pre-commit built for `language: python` hooks."""
        return sorted(self.home.glob("repo*/py_env-*"))

    def run(self, *args: str) -> subprocess.CompletedProcess:
        git(self.path, "add", "-A")
        # the `gradlint` on PATH is this checkout's: what `language: system` hooks find
        env = {**os.environ, "PRE_COMMIT_HOME": str(self.home), "NO_COLOR": "1",
               "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
        return subprocess.run([str(BIN / "pre-commit"), "run", "--color", "never", *args],
                              cwd=self.path, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture
def project(tmp_path, hooks_repo, pre_commit_home) -> Project:
    (tmp_path / "project").mkdir()
    return Project(tmp_path / "project", hooks_repo, pre_commit_home)


def test_manifest_is_valid_for_pre_commit():
    result = subprocess.run([str(BIN / "pre-commit"), "validate-manifest",
                             str(ROOT / ".pre-commit-hooks.yaml")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    hooks = {hook["id"]: hook for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"gradlint", "gradlint-run"}
    assert "--force-exclude" in hooks["gradlint"]["entry"]


def test_gradlint_hook_fails_on_a_finding_and_fixes_with_args(project):
    (project / "test_ops.py").write_text(FLOAT32)
    (project / "clean.py").write_text("import torch\n")
    project.configure({"id": "gradlint"})
    result = project.run("--all-files")
    assert result.returncode == 1, result.stdout + result.stderr
    assert status(result.stdout, "gradlint") == "Failed"
    assert "test_ops.py:7:33: GL001 gradcheck input `x` is float32" in result.stdout

    project.configure({"id": "gradlint", "args": ["--fix"]})
    fixed = project.run("--all-files")
    assert fixed.returncode == 1  # pre-commit fails a hook that changed files...
    assert "files were modified by this hook" in fixed.stdout
    assert "dtype=torch.float64, requires_grad=True" in (project / "test_ops.py").read_text()
    again = project.run("--all-files")
    assert again.returncode == 0, again.stdout  # ...and the next run passes
    assert status(again.stdout, "gradlint") == "Passed"


def test_gradlint_hook_checks_notebooks_and_honours_excludes(project):
    nb = new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                               "language": "python"}})
    nb.cells = [new_code_cell("import torch\nfrom torch.autograd import gradcheck"),
                new_code_cell("gradcheck(torch.sin, (torch.randn(2, requires_grad=True),))")]
    nbformat.write(nb, str(project / "proto.ipynb"))
    (project / "vendored").mkdir()
    (project / "vendored" / "test_old.py").write_text(FLOAT32)
    (project / "pyproject.toml").write_text('[tool.gradlint]\nexclude = ["vendored/"]\n')
    project.configure({"id": "gradlint"})
    result = project.run("--all-files")
    assert result.returncode == 1
    assert "proto.ipynb:cell 2:1:23: GL001" in result.stdout
    assert "vendored" not in result.stdout  # pre-commit named it; --force-exclude drops it


def test_no_files_to_check_is_skipped(project):
    (project / "README.md").write_text("# nothing to lint\n")
    project.configure({"id": "gradlint"}, {"id": "gradlint-run"})
    result = project.run("--all-files")
    assert result.returncode == 0, result.stdout + result.stderr
    assert status(result.stdout, "gradlint") == "(no files to check)Skipped"
    assert status(result.stdout, "gradlint run (gradcheck)") == "(no files to check)Skipped"
    # and when every named file is excluded, the hook passes without checking `.`
    (project / "pyproject.toml").write_text('[tool.gradlint]\nexclude = ["gen_*.py"]\n')
    (project / "gen_ops.py").write_text(FLOAT32)
    (project / "nested").mkdir()
    (project / "nested" / "test_other.py").write_text(FLOAT32)
    result = project.run("--files", "gen_ops.py")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "nested" not in result.stdout


def test_gradlint_run_hook_runs_gradcheck_on_changed_files(project):
    (project / "ops.py").write_text(WRONG_BACKWARD)
    (project / "good.py").write_text(RIGHT_BACKWARD.replace("Cube", "GoodCube"))
    project.configure({"id": "gradlint-run"})
    result = project.run("--files", "ops.py", "good.py")
    assert result.returncode == 1, result.stdout + result.stderr
    assert status(result.stdout, "gradlint run (gradcheck)") == "Failed"
    assert "ops.py::Cube" in result.stdout
    (project / "ops.py").write_text(RIGHT_BACKWARD)
    result = project.run("--files", "ops.py")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_hook_environment_has_no_torch_and_fits_pre_commit_ci(project):
    (project / "clean.py").write_text("import torch\n")
    project.configure({"id": "gradlint"})
    assert project.run("--all-files").returncode == 0
    [environment] = project.hook_environments()
    size = tree_size(environment)
    assert size < PRE_COMMIT_CI_LIMIT, f"{size / 2 ** 20:.0f} MiB"
    assert not list(environment.glob("lib/python3*/site-packages/torch")), "the hook environment has torch"
    print(f"gradlint hook environment: {size / 2 ** 20:.1f} MiB")


def test_the_hook_honours_the_baseline(cli, project):
    """Adopting gradlint: the old findings go into the baseline; the hook then passes through
    moved lines and fails on a new mistake only (one finding)."""
    (project / "test_ops.py").write_text(FLOAT32)
    (project / "pyproject.toml").write_text("[tool.gradlint]\n")
    project.configure({"id": "gradlint"})
    assert project.run("--all-files").returncode == 1
    assert cli("check", "--write-baseline", cwd=project.path).returncode == 0
    passed = project.run("--all-files")
    assert passed.returncode == 0, passed.stdout
    (project / "test_ops.py").write_text("import os\n\n" + FLOAT32 + NEW_MISTAKE)
    failed = project.run("--files", "test_ops.py")
    assert failed.returncode == 1, failed.stdout
    found = [line for line in failed.stdout.splitlines() if ": GL0" in line]
    assert found == ["test_ops.py:14:33: GL001 gradcheck input `y` is float32 (torch's default dtype); "
                     "finite differences need float64 [*]"]
    assert "Found 1 problem" in failed.stdout


def test_the_readmes_snippet_works_as_written(tmp_path, pre_commit_home):
    """The README's .pre-commit-config.yaml, with only the repository's URL replaced by a clone
    of this repository: the `rev` it names must be there."""
    rev = pre_commit_rev()
    if tag_commit(rev) is None:
        pytest.skip(MISSING_TAG.format(tag=rev) + " (tests/test_install_paths.py fails on it)")
    clone = clone_with_tags(tmp_path / "gradlint")
    config = pre_commit_config()
    config["repos"][0]["repo"] = str(clone)
    project = Project(tmp_path / "project", (clone, rev), tmp_path / "home")
    (project / "test_ops.py").write_text(FLOAT32)
    (project / "ops.py").write_text(WRONG_BACKWARD)
    project.write_config(config)
    result = project.run("--all-files")
    assert result.returncode == 1, result.stdout + result.stderr
    assert status(result.stdout, "gradlint") == "Failed"
    assert "test_ops.py:7:33: GL001" in result.stdout
    assert status(result.stdout, "gradlint run (gradcheck)") == "Failed"
    assert "ops.py::Cube" in result.stdout
    [environment] = project.hook_environments()
    assert tree_size(environment) < PRE_COMMIT_CI_LIMIT
