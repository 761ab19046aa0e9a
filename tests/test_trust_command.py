"""`gradlint trust` / `gradlint untrust`: the list of trusted folders lives in the user's own
configuration, covers the folders under a listed one, and is not honoured when someone
else could have written it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gradlint.engine import trust_store


@pytest.fixture
def user_config(tmp_path) -> dict[str, str]:
    return {"GRADLINT_CONFIG_DIR": str(tmp_path / "config")}


def test_trust_list_and_untrust(cli, tmp_path, user_config):
    project = tmp_path / "project"
    (project / "sub").mkdir(parents=True)
    trusted = cli("trust", cwd=project, env=user_config)
    assert trusted.returncode == 0, trusted.stderr
    assert trusted.stdout.startswith(f"Trusted {project.resolve()}: ")
    stored = json.loads((tmp_path / "config" / "trusted-folders.json").read_text())
    assert [entry["path"] for entry in stored["trusted"]] == [str(project.resolve())]
    assert (tmp_path / "config" / "trusted-folders.json").stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in project.rglob("*")) == ["sub"]  # nothing written in the project

    assert "already trusted" in cli("trust", "sub", cwd=project, env=user_config).stdout
    assert cli("trust", "--list", env=user_config).stdout.splitlines() == [str(project.resolve())]
    still = cli("untrust", str(project / "sub"), env=user_config)
    assert f"still trusted through {project.resolve()}" in still.stdout
    assert cli("untrust", str(project), env=user_config).stdout.strip() == f"{project.resolve()} is no longer trusted."
    assert "No trusted folders" in cli("trust", "--list", env=user_config).stdout
    assert cli("trust", str(tmp_path / "missing"), env=user_config).returncode == 2


def test_the_list_is_found_in_the_users_configuration_directory(tmp_path):
    home = tmp_path / "home"
    assert trust_store.default_location({}, home) == home / ".config" / "gradlint" / "trusted-folders.json"
    assert trust_store.default_location({"XDG_CONFIG_HOME": "/x"}, home) == Path("/x/gradlint/trusted-folders.json")
    assert trust_store.default_location({"GRADLINT_CONFIG_DIR": "/y", "XDG_CONFIG_HOME": "/x"}, home) \
        == Path("/y/trusted-folders.json")


def test_a_folder_is_trusted_through_a_listed_folder_above_it_and_symlinks_are_resolved(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "a")
    store = trust_store.TrustStore(tmp_path / "list.json")
    store.add(tmp_path / "link")
    assert store.folders == [(tmp_path / "a").resolve()]
    assert store.trusting(tmp_path / "a" / "b") == (tmp_path / "a").resolve()
    assert store.trusting(tmp_path) is None
    assert store.trusting(tmp_path / "ab") is None  # a prefix of the name is not a parent
    trust_store.save(store)
    assert trust_store.load(tmp_path / "list.json").folders == store.folders


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
def test_a_list_others_can_write_is_not_honoured(tmp_path):
    store = trust_store.TrustStore(tmp_path / "list.json")
    store.add(tmp_path)
    trust_store.save(store)
    folders = trust_store.TrustedFolders(tmp_path / "list.json")
    assert folders.trusting(tmp_path) == tmp_path.resolve() and folders.problem is None
    os.chmod(tmp_path / "list.json", 0o622)
    assert folders.trusting(tmp_path) is None
    assert "can be written by other users" in folders.problem
    os.chmod(tmp_path / "list.json", 0o600)
    assert folders.trusting(tmp_path) == tmp_path.resolve()
    (tmp_path / "list.json").write_text("{broken")
    assert folders.trusting(tmp_path) is None and "invalid JSON" in folders.problem
