"""`python -m gradlint`: the same command as the `gradlint` script.

Python puts the working directory first on ``sys.path`` for ``-m``; an editor starts the
language server in the workspace, so a ``libcst.py`` or ``pygls/`` there would be
imported (and run) in place of gradlint's dependencies. The entry is removed before
anything else is imported. (A ``gradlint.py`` or ``gradlint/`` in the working directory
is found by Python before this file runs: only a launch line without the working
directory on ``sys.path`` avoids it: the `gradlint` script, ``python -P`` or
``python -I``; see "Safe launch lines" in the README.)
"""

import os
import sys


def _drop_working_directory() -> None:
    if getattr(sys.flags, "safe_path", False) or not sys.path:
        return  # -P or -I: Python added no such entry
    first = sys.path[0]
    try:
        here = first == "" or os.path.samefile(first, os.getcwd())
    except OSError:
        here = False
    if here:
        del sys.path[0]


_drop_working_directory()

from .cli.main import main  # noqa: E402  (after the path is safe)

raise SystemExit(main())
