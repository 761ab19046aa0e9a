"""Client payloads as plain data: what pygls gives for untyped parameters (objects,
namedtuples, attrs classes) as dicts, lists and scalars."""

from __future__ import annotations

from typing import Any

from pygls.protocol import default_converter

_CONVERTER = default_converter()


def plain(value: Any) -> Any:
    """``value`` as plain dicts/lists (pygls gives objects for untyped params)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if hasattr(value, "_asdict"):  # pygls gives untyped params as namedtuples: before tuples
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if hasattr(value, "__dict__"):
        return {k: plain(v) for k, v in vars(value).items() if not k.startswith("_")}
    try:
        import attrs

        if attrs.has(type(value)):
            return plain(_CONVERTER.unstructure(value))
    except Exception:
        pass
    return value
