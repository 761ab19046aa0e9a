"""Editor settings: what the client sends (initializationOptions, workspace/configuration)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from ..engine.config import RUN_OPTIONS, ConfigError, expand_codes, run_option
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
    # seconds a run may take; None: derived from the run's checks as `gradlint run` does (60 s,
    # more with compile or precision checks: runner/run_options.py)
    run_timeout: float | None = None
    run_memory_limit_mb: int = DEFAULT_LIMITS["memory_bytes"] // 2 ** 20
    run_on_save: bool = False
    interpreter: str | None = None  # the Python that runs gradcheck workers
    docs_url: str | None = None  # e.g. "https://example.org/rules/{code}" for codeDescription
    run_options: Mapping[str, Any] = field(default_factory=dict)  # eps, atol, ... for runs
    # compile, dtype, precision_factor (runCompile, runDtype, runPrecisionFactor): override the
    # project's [tool.gradlint.run]; a key is absent when the editor leaves it to the project
    run_checks: Mapping[str, Any] = field(default_factory=dict)
    # "auto": workspace/diagnostic answered for pull clients; "workspace": push clients get
    # closed files published too; "openFilesOnly": open files only, for every client
    diagnostic_mode: str = "auto"
    # findings the project's baseline holds: "hint" (shown as hints) or "hide"
    baselined_findings: str = "hint"


# the keys a client may send (after VS Code's nested `run.*`/`codeLens.*` are flattened);
# `args` and `trace` are the VS Code extension's own (its part of the `gradlint` section)
KEYS = ("enable", "select", "ignore", "severity", "debounce", "docsUrl", "diagnosticMode",
        "baselinedFindings", "interpreter", "runTimeout", "runMemoryLimitMb", "runOnSave", "codeLens",
        "runOptions", "runCompile", "runDtype", "runPrecisionFactor")
# the editor's settings of the checks a run adds, and the worker option each one sets
RUN_CHECK_KEYS = {"runCompile": "compile", "runDtype": "dtype", "runPrecisionFactor": "precision_factor"}
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
    if "runTimeout" in values and values["runTimeout"] is None:
        changes["run_timeout"] = None  # derived again
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
        changes["run_options"] = _run_options(values["runOptions"], problems)
    if any(key in values for key in RUN_CHECK_KEYS):
        changes["run_checks"] = _run_checks(values, settings.run_checks, problems)
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


def _run_options(raw: Mapping[str, Any], problems: list[str]) -> dict[str, Any]:
    """runOptions as given, with compile, dtype and precision_factor checked as the
    runCompile/runDtype/runPrecisionFactor settings are (a bad one is reported and dropped)."""
    options = {str(key): value for key, value in raw.items()}
    for option in RUN_OPTIONS:
        if option in options:
            try:
                options[option] = run_option(option, options[option], f"runOptions.{option}")
            except ConfigError as error:
                problems.append(str(error))
                del options[option]
    return options


def _run_checks(values: Mapping[str, Any], current: Mapping[str, Any], problems: list[str]) -> dict[str, Any]:
    """runCompile (true, false, a backend or a list of them), runDtype (bfloat16, float16,
    float32 or "none"), runPrecisionFactor (≥ 1) as worker options; null leaves the option
    to the project's [tool.gradlint.run]."""
    checks = dict(current)
    for key, option in RUN_CHECK_KEYS.items():
        if key not in values:
            continue
        checks.pop(option, None)
        if values[key] is None:
            continue
        try:
            checks[option] = run_option(option, values[key], key)
        except ConfigError as error:
            problems.append(str(error))
    return checks
