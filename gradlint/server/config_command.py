"""`gradlint.showConfiguration` (workspace/executeCommand): the effective configuration for
a document and where each value came from, as `gradlint config PATH --format json` prints
it, with the editor's settings as one more origin."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcInvalidParams

from ..engine.config_report import Override, explain
from .settings import Settings

if TYPE_CHECKING:  # pragma: no cover
    from .language_server import GradlintServer

SHOW_CONFIGURATION = "gradlint.showConfiguration"


def _uri(arguments: Any) -> str | None:
    if isinstance(arguments, (list, tuple)) and arguments:
        arguments = arguments[0]
    if isinstance(arguments, str):
        return arguments
    if isinstance(arguments, dict):
        value = arguments.get("uri")
        return value if isinstance(value, str) else None
    return getattr(arguments, "uri", None)


def _overrides(settings: Settings) -> list[Override]:
    overrides = []
    if settings.select:
        overrides.append(Override("select", list(settings.select), "editor setting gradlint.select"))
    if settings.ignore:
        overrides.append(Override("ignore", list(settings.ignore), "editor setting gradlint.ignore"))
    if settings.severity:
        overrides.append(Override("severity", {k: v.value for k, v in settings.severity.items()},
                                  "editor setting gradlint.severity"))
    return overrides


def show_configuration(ls: "GradlintServer", uri: str) -> dict:
    settings = ls.settings_for(uri)
    _, root = ls.folder_of(uri)
    path = ls.path_of(uri)
    target = path if path is not None else root / "untitled.py"
    config = ls.configs.config_for(target, root)
    options = ls.configs.options(path, root, settings)
    unknown = ls.configs.default_dtype_unknown(path, root)
    report = explain(target, str(path or uri), config, _overrides(settings),
                     dtype_unknown=unknown, options=options).as_json()
    report["uri"] = uri
    report["editor"] = {"enable": settings.enable, "diagnosticMode": settings.diagnostic_mode,
                        "debounceMs": settings.debounce_ms}
    return report


def attach(ls: "GradlintServer") -> None:
    @ls.command(SHOW_CONFIGURATION)
    def show(ls, *arguments):
        uri = _uri(list(arguments))
        if uri is None:
            raise JsonRpcInvalidParams(f"{SHOW_CONFIGURATION} expects a document URI")
        return show_configuration(ls, uri)

