"""The lane's imports, done once in the worker (and again in a spawned cell), and the versions they
report."""

from __future__ import annotations

import importlib
import importlib.util
import sys


def import_lane(config: dict) -> None:
    """The lane's imports (the optional ones where installed), then its prelude."""
    for name in config["imports"]:
        importlib.import_module(name)
    for name in config.get("optional_imports", ()):
        try:  # a dotted name imports its parents to be found: a missing parent raises
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:
            found = False
        if found:
            importlib.import_module(name)
    if config.get("prelude"):
        exec(compile(config["prelude"], "<lane prelude>", "exec", dont_inherit=True), {"__name__": "__lane__"})
    if "numpy" in sys.modules:  # every cell seeds NumPy's generator (_reseed): 17 ms a cell to import it there
        importlib.import_module("numpy.random")


def imported_versions(config: dict) -> dict:
    """The `__version__` of each imported top-level module of the lane, by name."""
    versions = {}
    for name in config["imports"]:
        module = sys.modules.get(name.split(".")[0])
        version = getattr(module, "__version__", None)
        if isinstance(version, str):
            versions[name.split(".")[0]] = version
    return versions
