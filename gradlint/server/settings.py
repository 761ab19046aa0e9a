"""Editor settings: what the client sends (initializationOptions, workspace/configuration)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from ..engine.config import ConfigError, expand_codes
from ..findings import Severity
from ..runner.protocol import DEFAULT_LIMITS

log = logging.getLogger("gradlint.server")

_SEVERITIES = {"error": Severity.ERROR, "warning": Severity.WARNING, "information": Severity.INFO,
               "info": Severity.INFO, "hint": Severity.HINT}


@dataclass(frozen=True)
class Settings:
    enable: bool = True
    select: tuple[str, ...] | None = None  # None: the project's configuration decides
    ignore: tuple[str, ...] = ()
    severity: Mapping[str, Severity] = field(default_factory=dict)
    debounce_ms: int = 200
    code_lens: bool = True
    run_timeout: float = DEFAULT_LIMITS["timeout_s"]  # one default: CLI, editor, README (60 s)
    run_memory_limit_mb: int = DEFAULT_LIMITS["memory_bytes"] // 2 ** 20
    run_on_save: bool = False
    interpreter: str | None = None  # the Python that runs gradcheck workers
    docs_url: str | None = None  # e.g. "https://example.org/rules/{code}" for codeDescription
    run_options: Mapping[str, Any] = field(default_factory=dict)  # eps, atol, ... for runs
    # "auto": workspace/diagnostic answered for pull clients; "workspace": push clients get
    # closed files published too; "openFilesOnly": open files only, for every client
    diagnostic_mode: str = "auto"
    # findings the project's baseline holds: "hint" (shown as hints) or "hide"
    baselined_findings: str = "hint"


# the keys a client may send (after VS Code's nested `run.*`/`codeLens.*` are flattened);
# `args` and `trace` are the VS Code extension's own (its part of the `gradlint` section)
KEYS = ("enable", "select", "ignore", "severity", "debounce", "docsUrl", "diagnosticMode",
        "baselinedFindings", "interpreter", "runTimeout", "runMemoryLimitMb", "runOnSave", "codeLens",
        "runOptions")
CLIENT_KEYS = ("args", "trace", "debounceMs", "workspaceTrusted")
DIAGNOSTIC_MODES = ("auto", "workspace", "openFilesOnly")
BASELINED_FINDINGS = ("hint", "hide")


def _flatten(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Accept both flat keys and VS Code's nested ones (``run.timeout``, ``codeLens.enable``)."""
    flat: dict[str, Any] = {}
    for key, value in raw.items():
        if key == "run" and isinstance(value, dict):
            for inner, inner_value in value.items():
                flat["run" + inner[:1].upper() + inner[1:]] = inner_value
        elif key == "codeLens" and isinstance(value, dict):
            flat["codeLens"] = value.get("enable", True)
        else:
            flat[key] = value
    if "runMemoryLimit" in flat and "runMemoryLimitMb" not in flat:
        flat["runMemoryLimitMb"] = flat.pop("runMemoryLimit")
    return flat


def parse_settings(raw: Any, base: Settings | None = None) -> tuple[Settings, list[str]]:
    """Settings from a client payload; invalid entries are skipped and described."""
    settings = base or Settings()
    problems: list[str] = []
    if not isinstance(raw, Mapping):
        return settings, ([] if raw is None else [f"settings must be an object, got {type(raw).__name__}"])
    if "gradlint" in raw and isinstance(raw["gradlint"], Mapping):
        raw = raw["gradlint"]
    values = _flatten(raw)
    changes: dict[str, Any] = {}
    unknown = sorted(str(key) for key in values if key not in KEYS and key not in CLIENT_KEYS)
    if unknown:
        problems.append(f"unknown setting{'s' if len(unknown) > 1 else ''} "
                        f"{', '.join(f'`{key}`' for key in unknown)} (known: {', '.join(KEYS)})")

    def codes(key: str) -> tuple[str, ...] | None:
        value = values.get(key)
        if value is None:
            return None
        if isinstance(value, str):
            value = [value]
        try:
            return tuple(expand_codes(value, key))
        except ConfigError as error:
            problems.append(str(error))
            return None

    if "enable" in values:
        changes["enable"] = bool(values["enable"])
    if "select" in values:
        selected = codes("select")
        changes["select"] = selected if selected else None
    if "ignore" in values:
        changes["ignore"] = codes("ignore") or ()
    if isinstance(values.get("severity"), Mapping):
        severity = {}
        for code, level in values["severity"].items():
            mapped = _SEVERITIES.get(str(level).lower())
            if mapped is None:
                problems.append(f"severity: `{level}` for {code} is not error, warning, information or hint")
            else:
                severity[str(code).upper()] = mapped
        changes["severity"] = severity
    for key, attr, kind in (("debounce", "debounce_ms", int), ("debounceMs", "debounce_ms", int),
                            ("runTimeout", "run_timeout", float),
                            ("runMemoryLimitMb", "run_memory_limit_mb", int)):
        if key in values and values[key] is not None:
            try:
                number = kind(values[key])
                if number < 0:
                    raise ValueError
                changes[attr] = number
            except (TypeError, ValueError):
                problems.append(f"{key}: expected a non-negative number, got {values[key]!r}")
    for key, attr in (("codeLens", "code_lens"), ("runOnSave", "run_on_save")):
        if key in values and values[key] is not None:
            changes[attr] = bool(values[key])
    if isinstance(values.get("runOptions"), Mapping):
        changes["run_options"] = dict(values["runOptions"])
    if "diagnosticMode" in values and values["diagnosticMode"] is not None:
        if values["diagnosticMode"] in DIAGNOSTIC_MODES:
            changes["diagnostic_mode"] = values["diagnosticMode"]
        else:
            problems.append(f"diagnosticMode: expected one of {', '.join(DIAGNOSTIC_MODES)}, "
                            f"got {values['diagnosticMode']!r}")
    if "baselinedFindings" in values and values["baselinedFindings"] is not None:
        if values["baselinedFindings"] in BASELINED_FINDINGS:
            changes["baselined_findings"] = values["baselinedFindings"]
        else:
            problems.append(f"baselinedFindings: expected one of {', '.join(BASELINED_FINDINGS)}, "
                            f"got {values['baselinedFindings']!r}")
    for key, attr in (("interpreter", "interpreter"), ("docsUrl", "docs_url")):
        value = values.get(key)
        if isinstance(value, list):
            value = value[0] if value else None
        if value is not None and key in values:
            changes[attr] = str(value) or None
    return replace(settings, **changes), problems
