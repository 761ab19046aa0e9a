"""Where test code expects an exception: code under ``with self.assertRaises(...)`` or
``with pytest.raises(...)`` triggers a mistake on purpose, to check torch's error."""

from __future__ import annotations

import libcst as cst

from .names import dotted_name
from .scopes import Site

_RAISES = frozenset({"assertRaises", "assertRaisesRegex", "assertRaisesRegexp", "raises"})


def expects_exception(site: Site) -> bool:
    for frame in site.frames:
        owner = frame.owner
        if not isinstance(owner, cst.With):
            continue
        for item in owner.items:
            expr = item.item
            if not isinstance(expr, cst.Call):
                continue
            name = dotted_name(expr.func) or ""
            if name.split(".")[-1] in _RAISES:
                return True
    return False
