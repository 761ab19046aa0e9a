"""Entry point of the gradcheck worker, run as a file in the user's interpreter.

``python -u /abs/path/to/gradlint/worker/__main__.py`` puts this folder first on
``sys.path``, where its module names (``checks``, ``job``, ...) could shadow the user's
own modules. So the folder is taken off ``sys.path`` and loaded as the private package
``_gradlint_worker``; gradlint itself need not be installed in that interpreter.
"""

import os
import sys

PRIVATE_NAME = "_gradlint_worker"


def _load_private_package():
    import importlib.util

    here = os.path.dirname(os.path.realpath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) != here]
    spec = importlib.util.spec_from_file_location(
        PRIVATE_NAME, os.path.join(here, "__init__.py"), submodule_search_locations=[here])
    package = importlib.util.module_from_spec(spec)
    sys.modules[PRIVATE_NAME] = package
    spec.loader.exec_module(package)
    return __import__(PRIVATE_NAME + ".zygote", fromlist=["main"])


if __name__ == "__main__":
    if __package__:  # python -m gradlint.worker
        from .zygote import main
    else:
        main = _load_private_package().main
    code = main()
    # Nothing is left to do: every run has ended and its processes are gone. Tearing down
    # an interpreter that imported torch takes a quarter of a second, which `gradlint run`
    # would wait for; the zygote runs no user code whose exit handlers could matter.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
