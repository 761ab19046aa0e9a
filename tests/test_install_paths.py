"""Installing gradlint without a clone: the README's first install line, run as a new user
would (the repository's URL replaced by a clone of this repository, tags included) in a
fresh venv; the tag it names; the release workflow that publishes to PyPI; and every install
command of the docs pinning the same release and torch 2.13.0."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest
import yaml

import gradlint
from readme_release import (MISSING_TAG, REPOSITORY, ROOT, clone_with_tags, first_install_line, git, local_spec,
                            pre_commit_rev, tag_commit, tree_size, version_at)

WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"
TAG = f"v{gradlint.__version__}"
REQUIREMENTS = (ROOT / "requirements-dev.txt").read_text().split()
PRE_COMMIT_CI_LIMIT = 250 * 2 ** 20  # pre-commit.ci's free tier, per hook environment


def _clean_env() -> dict[str, str]:
    drop = {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP"}
    return {k: v for k, v in os.environ.items() if k not in drop} | {"NO_COLOR": "1"}


def test_the_readme_names_this_versions_tag_everywhere():
    assert first_install_line() == f'pip install "torch-gradlint @ git+{REPOSITORY}@{TAG}"'
    assert pre_commit_rev() == TAG
    check = subprocess.run([sys.executable, str(ROOT / "scripts" / "release_check.py"), TAG],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout
    wrong = subprocess.run([sys.executable, str(ROOT / "scripts" / "release_check.py"), "v9.9.9"],
                           capture_output=True, text=True)
    assert wrong.returncode == 1 and "__version__ is" in wrong.stdout


def test_the_readme_names_a_tag_of_this_repository():
    """pip and pre-commit fetch the tag the README names: it must exist, at a commit of this
    version with the hooks manifest."""
    commit = tag_commit(TAG)
    if commit is None and not git("tag", "--list").stdout.strip():
        pytest.skip("this clone carries no tags at all (cloned with --no-tags or shallow): "
                    + MISSING_TAG.format(tag=TAG))
    assert commit is not None, MISSING_TAG.format(tag=TAG)
    assert version_at(TAG) == gradlint.__version__

    hooks = yaml.safe_load(git("show", f"{TAG}:.pre-commit-hooks.yaml").stdout)
    assert {hook["id"] for hook in hooks} == {"gradlint", "gradlint-run"}


@pytest.mark.slow
def test_the_first_install_line_works_from_nothing(tmp_path):
    """A fresh venv with nothing but pip; the README's first line (the tag of this repository
    instead of GitHub's); then gradlint checks the examples, and there is no torch."""
    if tag_commit(TAG) is None:
        pytest.skip(MISSING_TAG.format(tag=TAG) + " (test_the_readme_names_a_tag_of_this_repository fails)")
    clone = clone_with_tags(tmp_path / "gradlint")
    env_dir = tmp_path / "fresh venv"
    venv.EnvBuilder(with_pip=True, symlinks=True).create(str(env_dir))
    python = env_dir / "bin" / "python"
    line = local_spec(first_install_line(), clone)
    assert line.startswith("pip install ")
    command = [str(python), "-m", "pip", "install", "--disable-pip-version-check",
               line.removeprefix("pip install ").strip('"')]
    installed = subprocess.run(command, cwd=tmp_path, env=_clean_env(), capture_output=True, text=True,
                               timeout=900)
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
    version = subprocess.run([str(env_dir / "bin" / "gradlint"), "--version"], capture_output=True, text=True,
                             env=_clean_env())
    assert version.stdout.strip() == f"gradlint {gradlint.__version__}"
    assert subprocess.run([str(python), "-c", "import torch"], capture_output=True).returncode != 0
    checked = subprocess.run([str(env_dir / "bin" / "gradlint"), "check", str(ROOT / "examples")],
                             capture_output=True, text=True, env=_clean_env(), cwd=tmp_path)
    assert checked.returncode == 1 and " GL001 " in checked.stdout, checked.stdout + checked.stderr
    site = next((env_dir / "lib").glob("python3*/site-packages"))
    assert tree_size(site) < PRE_COMMIT_CI_LIMIT / 4, tree_size(site)


def test_the_release_workflow_builds_checks_and_publishes_with_trusted_publishing():
    workflow = yaml.safe_load(WORKFLOW.read_text())
    assert workflow[True if True in workflow else "on"] == {"push": {"tags": ["v*.*.*"]}}
    assert workflow["permissions"] == {"contents": "read"}
    jobs = workflow["jobs"]
    assert set(jobs) == {"build", "vsix", "github-release", "pypi"}
    for job in jobs.values():
        for step in job["steps"]:
            if "uses" in step:
                action, _, version = step["uses"].partition("@")
                assert version.startswith(("v", "release/v")), f"pin {action}"
    build = "\n".join(step.get("run", "") for step in jobs["build"]["steps"])
    assert 'python scripts/release_check.py "$GITHUB_REF_NAME"' in build
    assert "python -m build" in build and 'import torch' in build
    pypi = jobs["pypi"]
    assert pypi["permissions"] == {"id-token": "write"}  # OIDC, no token
    assert pypi["environment"]["name"] == "pypi"
    assert pypi["environment"]["url"] == "https://pypi.org/p/torch-gradlint"
    assert [step["uses"] for step in pypi["steps"] if "uses" in step][-1] == "pypa/gh-action-pypi-publish@release/v1"
    assert not any("password" in (step.get("with") or {}) for step in pypi["steps"])
    assert set(pypi["needs"]) == {"build", "github-release"}
    assert jobs["github-release"]["permissions"] == {"contents": "write"}


@pytest.mark.slow
def test_the_release_workflows_build_steps_run(tmp_path):
    """The build job's `run:` steps, as the runner runs them, on a clone of this checkout:
    the wheel and the sdist of torch-gradlint are built and the wheel lints without torch."""

    clone = tmp_path / "repo"
    git("clone", "--quiet", "--no-local", str(ROOT), str(clone), cwd=tmp_path)
    # the working tree's changes too (the workflow file itself may be new)
    for name in git("ls-files", "--modified", "--others", "--exclude-standard").stdout.splitlines():
        source = ROOT / name
        if source.is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            (clone / name).write_bytes(source.read_bytes())
    workflow = yaml.safe_load(WORKFLOW.read_text())
    env = {**_clean_env(), "GITHUB_REF_NAME": TAG, "RUNNER_TEMP": str(tmp_path / "runner"),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    (tmp_path / "runner").mkdir()
    for step in workflow["jobs"]["build"]["steps"]:
        if "run" not in step:
            continue
        command = step["run"]
        if command.startswith("python -m pip install build=="):  # pinned here as in requirements-dev.txt
            first, _, command = command.partition("\n")
            assert first.removeprefix("python -m pip install ") in REQUIREMENTS, first
        ran = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", command], cwd=clone,
                             env=env, capture_output=True, text=True, timeout=900)
        assert ran.returncode == 0, (step["name"], ran.stdout[-2000:], ran.stderr[-3000:])
    built = sorted(p.name for p in (clone / "dist").iterdir())
    assert built == [f"torch_gradlint-{gradlint.__version__}-py3-none-any.whl",
                     f"torch_gradlint-{gradlint.__version__}.tar.gz"]
