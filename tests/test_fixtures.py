"""Snapshot tests: the real command on fixture trees, compared with committed output."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


def _compare(path: Path, actual: str, update: bool) -> None:
    if update or not path.exists():
        path.write_text(actual)
    assert actual == path.read_text(), f"snapshot {path.name} differs (pytest --update-snapshots)"


@pytest.mark.parametrize("name", ["seed", "custom_ops"])
def test_mistakes_snapshot(cli, update_snapshots, name):
    root = FIXTURES / name
    result = cli("check", ".", cwd=root / "mistakes")
    assert result.returncode == 1
    _compare(root / "expected.txt", result.stdout, update_snapshots)
    diff = cli("check", ".", "--diff", "--unsafe-fixes", cwd=root / "mistakes")
    _compare(root / "expected.diff", diff.stdout, update_snapshots)


@pytest.mark.parametrize("name", ["seed", "custom_ops"])
def test_correct_twins_are_clean(cli, name):
    result = cli("check", ".", cwd=FIXTURES / name / "correct")
    assert result.returncode == 0, result.stdout
    assert result.stdout.strip() == "All checks passed!"


@pytest.mark.parametrize("name", ["seed", "custom_ops"])
def test_every_mistake_is_found(cli, name):
    """Each mistakes/ file has at least one finding: no mistake goes unreported."""
    root = FIXTURES / name / "mistakes"
    import json
    findings = json.loads(cli("check", ".", "--format", "json", cwd=root).stdout)
    assert {f["path"] for f in findings} == {p.name for p in root.glob("*.py")}
