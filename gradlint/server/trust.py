"""Workspace trust: runs execute the workspace's code, so only the user may allow them.

Two sources, never both for one client:

- A client with workspace trust of its own (VS Code) says so: ``initializationOptions.
  workspaceTrusted`` or the ``gradlint/setWorkspaceTrust`` notification. Its word decides.
- Any other client (Neovim, Emacs, Helix, ...) says nothing: then the folders the user
  trusted with ``gradlint trust`` (gradlint/engine/trust_store.py, in the user's own
  configuration) decide, for the workspace folder of the file to run.

From the client, trust comes only from a JSON boolean ``true`` through the two channels it
controls: ``initializationOptions.workspaceTrusted`` and the ``gradlint/setWorkspaceTrust``
notification (or request) ``{"trusted": true}``. Anything else there (``"false"``,
``"no"``, ``1``, ``null``, an object) means untrusted, and is logged. Settings never carry
trust: ``workspace/didChangeConfiguration`` and ``workspace/configuration`` answers can
come from the workspace's own settings file (``.vscode/settings.json``), which is exactly
what an untrusted workspace controls.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("gradlint.server")

KEY = "workspaceTrusted"
# a client with trust of its own (VS Code) said the workspace is not trusted
UNTRUSTED = ("running gradcheck executes code from this workspace; trust the workspace "
             "to enable it (static diagnostics work without trust)")


def granted(value: Any, channel: str) -> bool:
    """True only for a boolean ``true``; anything else is untrusted (and logged)."""
    if value is True:
        return True
    if value is not False:
        log.warning("%s: %s is not a boolean; the workspace is not trusted (trust needs `true`)",
                    channel, "null" if value is None else repr(value))
    return False


def client_decides(options: Any) -> bool:
    """Does the client manage trust itself (it sent ``workspaceTrusted``, whatever its value)?"""
    return isinstance(options, dict) and KEY in options


def refusal(folder: str, problem: str | None) -> str:
    """Why a run is refused for a client without trust of its own, with the one command
    that trusts the folder."""
    import shlex

    because = f" ({problem})" if problem else ""
    return (f"running gradcheck executes code from {folder}, which is not trusted{because}: run "
            f"`gradlint trust {shlex.quote(folder)}` in a terminal (it is recorded in your own "
            f"configuration), then run gradcheck again; static diagnostics work without trust")


def from_initialization(options: Any) -> bool:
    if not isinstance(options, dict) or KEY not in options:
        return False
    return granted(options[KEY], f"initializationOptions.{KEY}")


def from_notification(params: Any) -> bool:
    if not isinstance(params, dict) or "trusted" not in params:
        log.warning("gradlint/setWorkspaceTrust: expected {\"trusted\": true|false}, got %r; "
                    "the workspace is not trusted", params)
        return False
    return granted(params["trusted"], "gradlint/setWorkspaceTrust")


def ignored_in_settings(raw: Any, channel: str) -> None:
    """Settings that try to carry trust are ignored, visibly."""
    if isinstance(raw, dict):
        nested = raw.get("gradlint")
        if KEY in raw or (isinstance(nested, dict) and KEY in nested):
            log.info("%s: `%s` is ignored: trust comes only from the client "
                     "(initializationOptions or gradlint/setWorkspaceTrust)", channel, KEY)
