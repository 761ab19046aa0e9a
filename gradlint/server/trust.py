"""Workspace trust: runs execute the workspace's code, so only the user may allow them.

Trust comes only from a JSON boolean ``true`` through the two channels the client
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


def granted(value: Any, channel: str) -> bool:
    """True only for a boolean ``true``; anything else is untrusted (and logged)."""
    if value is True:
        return True
    if value is not False:
        log.warning("%s: %s is not a boolean; the workspace is not trusted (trust needs `true`)",
                    channel, "null" if value is None else repr(value))
    return False


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
