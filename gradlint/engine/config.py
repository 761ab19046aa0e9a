"""``[tool.gradlint]`` in ``pyproject.toml``: finding it, validating it, applying it."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..analysis.source import SourceDecodeError
from ..findings import Severity
from .options import ALL_CODES, AUTO, LintOptions
from .reading import read_bytes

KEYS = ("select", "ignore", "exclude", "per-file-ignores", "severity", "default-dtype", "baseline", "run")
BASELINE_FILE = "gradlint-baseline.json"  # at the project root, unless `baseline` names another
DEFAULT_DTYPES = ("auto", "float32", "float64", "unknown")
# [tool.gradlint.run]: checks `gradlint run` (the editor's run, pytest --gradlint) adds when
# asked; the values the worker accepts (gradlint/worker/compiled.py, precision.py)
RUN_KEYS = ("compile", "dtype", "precision-factor")
COMPILE_BACKENDS = ("aot_eager", "inductor")
RUN_DTYPES = ("bfloat16", "float16", "float32")
# the worker options [tool.gradlint.run] gives, and every surface checks with run_option
RUN_OPTIONS = ("compile", "dtype", "precision_factor")


class ConfigError(Exception):
    """A configuration problem the user must fix; the message is one line."""


def expand_codes(selectors: Iterable[str], where: str) -> list[str]:
    """Validate code selectors (``GL``, ``GL00``, ``GL001``, ``ALL``); returns them upper-cased."""
    result = []
    for selector in selectors:
        if not isinstance(selector, str):
            raise ConfigError(f"{where}: expected rule codes as strings, got {selector!r}")
        code = selector.strip().upper()
        if code == "ALL" or any(c.startswith(code) for c in ALL_CODES) and re.fullmatch(r"GL\d{0,3}", code):
            result.append(code)
        else:
            raise ConfigError(f"{where}: unknown rule code `{selector}` (see `gradlint rules`)")
    return result


def _specificity(code: str, selectors: Iterable[str]) -> int:
    best = -1
    for selector in selectors:
        if selector == "ALL":
            best = max(best, 0)
        elif code.startswith(selector):
            best = max(best, len(selector))
    return best


def enabled_codes(select: Iterable[str], ignore: Iterable[str]) -> frozenset[str]:
    """The codes ``select`` turns on and ``ignore`` does not turn off; the more specific
    selector wins (``select = ["GL001"]`` with ``ignore = ["GL"]`` keeps GL001)."""
    select, ignore = list(select), list(ignore)
    enabled = set()
    for code in ALL_CODES:
        chosen = _specificity(code, select)
        dropped = _specificity(code, ignore)
        if chosen >= 0 and chosen > dropped:
            enabled.add(code)
    return frozenset(enabled)


_GLOB_CACHE: dict[str, re.Pattern] = {}


def glob_to_regex(pattern: str) -> re.Pattern:
    """gitignore-like globs: ``*`` within a path part, ``**`` across parts; a pattern
    without ``/`` matches a name at any depth; a trailing ``/`` matches a directory."""
    cached = _GLOB_CACHE.get(pattern)
    if cached is not None:
        return cached
    text = pattern.replace("\\", "/")
    anchored = "/" in text.rstrip("/")
    text = text.lstrip("/") if anchored else text
    out = []
    index = 0
    while index < len(text):
        if text.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
        elif text.startswith("**", index):
            out.append(".*")
            index += 2
        elif text[index] == "*":
            out.append("[^/]*")
            index += 1
        elif text[index] == "?":
            out.append("[^/]")
            index += 1
        else:
            out.append(re.escape(text[index]))
            index += 1
    body = "".join(out).rstrip("/")
    prefix = "" if anchored else "(?:.*/)?"
    compiled = re.compile(f"^{prefix}{body}(?:/.*)?$")
    _GLOB_CACHE[pattern] = compiled
    return compiled


def matches(relative: str, patterns: Iterable[str]) -> bool:
    return any(glob_to_regex(p).match(relative) for p in patterns)


@dataclass
class Config:
    """The validated settings of one ``pyproject.toml`` (or the defaults)."""

    root: Path  # the directory of the pyproject.toml (or the working directory)
    source: Path | None = None
    select: list[str] = field(default_factory=lambda: ["ALL"])
    ignore: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    severity: dict[str, Severity] = field(default_factory=dict)
    default_dtype: str = "auto"
    # worker options from [tool.gradlint.run]: compile, dtype, precision_factor
    run_options: dict[str, Any] = field(default_factory=dict)
    baseline: Path | None = None  # `baseline = "..."`, relative to the pyproject.toml

    @property
    def baseline_path(self) -> Path:
        """The baseline file of this configuration (it may not exist)."""
        return self.baseline if self.baseline is not None else self.root / BASELINE_FILE

    def relative(self, path: Path) -> str:
        try:
            return path.resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            return path.as_posix()

    def is_excluded(self, path: Path) -> bool:
        return bool(self.exclude) and matches(self.relative(path), self.exclude)

    def options_for(self, path: Path | None, select: list[str] | None = None,
                    extra_ignore: Iterable[str] = (), dtype_unknown: bool = False) -> LintOptions:
        ignore = [*self.ignore, *extra_ignore]
        if path is not None and self.per_file_ignores:
            relative = self.relative(path)
            for pattern, codes in self.per_file_ignores.items():
                if matches(relative, [pattern]):
                    ignore.extend(codes)
        enabled = enabled_codes(select if select is not None else self.select, ignore)
        dtype: str | None = AUTO
        if self.default_dtype == "unknown" or (self.default_dtype == "auto" and dtype_unknown):
            dtype = None
        elif self.default_dtype in ("float32", "float64"):
            dtype = self.default_dtype
        return LintOptions(select=enabled, severity=dict(self.severity), default_dtype=dtype)


def parse_config(data: Mapping[str, Any], root: Path, source: Path | None) -> Config:
    where = f"{source.name if source else 'configuration'} [tool.gradlint]"
    unknown = [key for key in data if key not in KEYS]
    if unknown:
        raise ConfigError(f"{where}: unknown key{'s' if len(unknown) > 1 else ''} "
                          f"{', '.join(f'`{k}`' for k in unknown)} (expected: {', '.join(KEYS)})")
    config = Config(root=root, source=source)
    if "select" in data:
        config.select = expand_codes(_string_list(data["select"], f"{where} select"), f"{where} select")
    if "ignore" in data:
        config.ignore = expand_codes(_string_list(data["ignore"], f"{where} ignore"), f"{where} ignore")
    if "exclude" in data:
        config.exclude = _string_list(data["exclude"], f"{where} exclude")
    if "per-file-ignores" in data:
        table = data["per-file-ignores"]
        if not isinstance(table, dict):
            raise ConfigError(f"{where} per-file-ignores: expected a table of glob = [codes]")
        config.per_file_ignores = {
            pattern: expand_codes(_string_list(codes, f"{where} per-file-ignores"),
                                  f"{where} per-file-ignores")
            for pattern, codes in table.items()}
    if "severity" in data:
        table = data["severity"]
        if not isinstance(table, dict):
            raise ConfigError(f"{where} severity: expected a table of CODE = \"error\"|\"warning\"|\"info\"|\"hint\"")
        for code, level in table.items():
            expand_codes([code], f"{where} severity")
            if code.upper() not in ALL_CODES:
                raise ConfigError(f"{where} severity: `{code}` must be a full rule code like GL001")
            try:
                config.severity[code.upper()] = Severity(str(level).lower())
            except ValueError:
                raise ConfigError(f"{where} severity: `{level}` for {code} is not one of "
                                  f"error, warning, info, hint") from None
    if "default-dtype" in data:
        value = data["default-dtype"]
        if value not in DEFAULT_DTYPES:
            raise ConfigError(f"{where} default-dtype: `{value}` is not one of {', '.join(DEFAULT_DTYPES)}")
        config.default_dtype = value
    if "baseline" in data:
        value = data["baseline"]
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{where} baseline: expected the path of a baseline file as a string "
                              f"(relative to this pyproject.toml), got {value!r}")
        config.baseline = root / value
    if "run" in data:
        config.run_options = parse_run_table(data["run"], f"{where} run")
    return config


def parse_run_table(table: Any, where: str) -> dict[str, Any]:
    """[tool.gradlint.run] as worker options (docs/run-result-schema.md, 2.3)."""
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: expected a table (compile, dtype, precision-factor)")
    unknown = [key for key in table if key not in RUN_KEYS]
    if unknown:
        raise ConfigError(f"{where}: unknown key{'s' if len(unknown) > 1 else ''} "
                          f"{', '.join(f'`{k}`' for k in unknown)} (expected: {', '.join(RUN_KEYS)})")
    return {key.replace("-", "_"): run_option(key, value, f"{where} {key}") for key, value in table.items()}


def run_option(name: str, value: Any, where: str) -> Any:
    """One of the options `[tool.gradlint.run]` and `gradlint run`'s flags give the worker
    (``compile``, ``dtype``, ``precision_factor``; ``-`` or ``_``), checked and normalised:
    ``compile`` is true, false or a list of backends; ``dtype`` a name or None (none)."""
    name = name.replace("-", "_")
    if name == "compile":
        if isinstance(value, str):
            value = [part.strip() for part in value.split(",") if part.strip()]
        if isinstance(value, bool):
            return value
        if isinstance(value, list) and value and all(v in COMPILE_BACKENDS for v in value):
            return list(dict.fromkeys(value))
        raise ConfigError(f"{where}: expected true, false or backends among "
                          f"{', '.join(COMPILE_BACKENDS)}, got {value!r}")
    if name == "dtype":
        if value is None or value == "none":
            return None
        if value not in RUN_DTYPES:
            raise ConfigError(f"{where}: `{value}` is not one of {', '.join(RUN_DTYPES)} (or none)")
        return value
    if name == "precision_factor":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 1:
            raise ConfigError(f"{where}: expected a number ≥ 1, got {value!r}")
        return float(value)
    raise ValueError(f"not a run option: {name}")


def _string_list(value: Any, where: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: expected a list of strings")
    return list(value)


def load_pyproject(path: Path) -> Config | None:
    """The config in ``path`` (a pyproject.toml), or None when it has no [tool.gradlint]."""
    if sys.version_info >= (3, 11):  # (imported here: a run that finds no pyproject.toml does not need it)
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        data = tomllib.loads(read_bytes(path).decode("utf-8"))
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path}: not UTF-8 text (byte {error.start}); TOML files must be UTF-8") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from None
    except SourceDecodeError as error:
        raise ConfigError(f"{path}: cannot read: {error.message}") from None
    except OSError as error:
        raise ConfigError(f"{path}: cannot read: {error.strerror or error}") from None
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(f"{path}: `tool` must be a table, not {_toml_type(tool)}")
    section = tool.get("gradlint")
    if section is None:
        return None
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: [tool.gradlint] must be a table, not {_toml_type(section)}")
    return parse_config(section, path.parent, path)


def _toml_type(value: Any) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a float", str: "a string", list: "an array"}
    return next((name for kind, name in names.items() if isinstance(value, kind)), "a date or time")


class ConfigResolver:
    """The nearest ``pyproject.toml`` with a ``[tool.gradlint]`` table, per directory."""

    def __init__(self, default_root: Path, explicit: Path | None = None):
        self.default_root = default_root
        self._explicit: Config | None = None
        if explicit is not None:
            if not explicit.exists() or explicit.is_dir():
                raise ConfigError(f"config file not found: {explicit}")
            self._explicit = load_pyproject(explicit) or Config(root=explicit.parent, source=explicit)
        self._by_dir: dict[Path, Config] = {}
        self._by_given_dir: dict[Path, Config] = {}  # the same, by the unresolved directory

    def for_path(self, path: Path) -> Config:
        if self._explicit is not None:
            return self._explicit
        given = path.parent if not path.is_dir() else path
        known = self._by_given_dir.get(given)
        if known is not None:
            return known
        directory = given.resolve()
        chain: list[Path] = []
        found: Config | None = None
        for candidate in (directory, *directory.parents):
            if candidate in self._by_dir:
                found = self._by_dir[candidate]
                break
            chain.append(candidate)
            pyproject = candidate / "pyproject.toml"
            if pyproject.exists() and not pyproject.is_dir():  # a FIFO or device: an error
                found = load_pyproject(pyproject)
                if found is not None:
                    break
        if found is None:
            found = Config(root=self.default_root)
        for candidate in chain:
            self._by_dir[candidate] = found
        self._by_given_dir[given] = found
        return found
