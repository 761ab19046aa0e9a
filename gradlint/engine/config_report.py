"""The effective configuration for one file, and where each value came from.

For `gradlint config PATH` and the language server's `gradlint.showConfiguration`
command: a value comes from gradlint's defaults, from a `[tool.gradlint]` table (which
pyproject.toml), or from an override (a command-line flag, an editor setting).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from ..rules import RULES_BY_CODE
from .config import KEYS, Config, matches
from .linter import AUTO, LintOptions

DEFAULT = "default"


@dataclass(frozen=True)
class Override:
    """A value set outside pyproject.toml: ``key`` is a config key (select, ignore, severity)."""

    key: str
    value: Any
    origin: str  # e.g. "--select", "editor setting gradlint.ignore"


@dataclass
class Entry:
    key: str
    value: Any
    origin: str


@dataclass
class ConfigReport:
    path: str
    config_file: str | None
    root: str
    entries: list[Entry] = field(default_factory=list)
    excluded_by: str | None = None
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    enabled: list[str] = field(default_factory=list)
    default_dtype: str = "auto"
    default_dtype_reason: str = ""

    def as_json(self) -> dict:
        return {
            "path": self.path,
            "configFile": self.config_file,
            "root": self.root,
            "settings": {e.key: {"value": e.value, "origin": e.origin} for e in self.entries},
            "excluded": self.excluded_by is not None,
            "excludedBy": self.excluded_by,
            "perFileIgnores": self.per_file_ignores,
            "enabledRules": self.enabled,
            "defaultDtype": {"value": self.default_dtype, "reason": self.default_dtype_reason},
        }

    def text(self) -> list[str]:
        lines = [f"Configuration for {self.path}",
                 f"  configuration file: {self.config_file or 'none found (gradlint defaults)'}",
                 f"  project root:       {self.root}", ""]
        width = max(len(e.key) for e in self.entries)
        for entry in self.entries:
            lines.append(f"  {entry.key:<{width}}  {_show(entry.value):<40}  # {entry.origin}")
        lines.append("")
        lines.append("For this file:")
        lines.append(f"  excluded:       {'yes, by `' + self.excluded_by + '`' if self.excluded_by else 'no'}")
        for pattern, codes in self.per_file_ignores.items():
            lines.append(f"  per-file-ignores `{pattern}` matches: ignores {', '.join(codes)}")
        names = ", ".join(self.enabled) if self.enabled else "none"
        lines.append(f"  enabled rules:  {names}")
        lines.append(f"  default dtype:  {self.default_dtype} ({self.default_dtype_reason})")
        return lines


def _show(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(f'"{v}"' for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f'{k} = "{_plain(v)}"' if not isinstance(v, list) else f'"{k}" = {_show(v)}'
                               for k, v in value.items()) + "}"
    return f'"{value}"' if isinstance(value, str) else str(value)


def _plain(value: Any) -> Any:
    return getattr(value, "value", value)


def _table_keys(source: Path | None) -> set[str]:
    if source is None:
        return set()
    try:
        with source.open("rb") as handle:
            data = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError):
        return set()
    table = data.get("tool", {}).get("gradlint", {})
    return set(table) if isinstance(table, dict) else set()


def explain(path: Path, display: str, config: Config, overrides: Sequence[Override] = (),
            *, dtype_unknown: bool = False, options: LintOptions | None = None) -> ConfigReport:
    """Where each setting for ``path`` comes from. ``options`` are the options actually
    used (the server passes its own); by default they are computed from ``config``."""
    in_table = _table_keys(config.source)
    origin_file = f"{config.source}" if config.source else None
    values = {
        "select": list(config.select), "ignore": list(config.ignore), "exclude": list(config.exclude),
        "per-file-ignores": {k: list(v) for k, v in config.per_file_ignores.items()},
        "severity": {k: v.value for k, v in config.severity.items()},
        "default-dtype": config.default_dtype,
        "baseline": str(config.baseline_path),
    }
    report = ConfigReport(display, origin_file, str(config.root))
    for key in KEYS:
        origin = origin_file if key in in_table and origin_file else DEFAULT
        entry = Entry(key, values[key], origin)
        for override in overrides:
            if override.key != key:
                continue
            if key == "ignore" and entry.value:  # flags and settings add to `ignore`
                entry = Entry(key, [*entry.value, *override.value], f"{entry.origin} + {override.origin}")
            elif key == "severity":
                entry = Entry(key, {**entry.value, **override.value}, f"{entry.origin} + {override.origin}")
            else:
                entry = Entry(key, list(override.value) if isinstance(override.value, (list, tuple))
                              else override.value, override.origin)
        report.entries.append(entry)

    relative = config.relative(path)
    for pattern in config.exclude:
        if matches(relative, [pattern]):
            report.excluded_by = pattern
            break
    report.per_file_ignores = {pattern: list(codes) for pattern, codes in config.per_file_ignores.items()
                               if matches(relative, [pattern])}
    if options is None:
        select = next((o.value for o in overrides if o.key == "select"), None)
        ignore = [code for o in overrides if o.key == "ignore" for code in o.value]
        options = config.options_for(path, list(select) if select else None, ignore,
                                     dtype_unknown=dtype_unknown)
    report.enabled = sorted(code for code in options.select if code in RULES_BY_CODE)
    report.default_dtype, report.default_dtype_reason = _dtype(config, options, dtype_unknown)
    return report


def _dtype(config: Config, options: LintOptions, dtype_unknown: bool) -> tuple[str, str]:
    if options.default_dtype == AUTO:
        return "auto", "read from each module's own torch.set_default_dtype calls"
    if options.default_dtype is None:
        if config.default_dtype == "unknown":
            return "unknown", "default-dtype = \"unknown\""
        return "unknown", ("a conftest.py or package __init__.py above the file calls "
                           "torch.set_default_dtype" if dtype_unknown else "configured")
    return str(options.default_dtype), f"default-dtype = \"{config.default_dtype}\""
