"""docs/architecture.md names every module, and no module grows past 400 lines without saying why."""

from __future__ import annotations

import ast
import os

from tests.conftest import ROOT

PACKAGE = os.path.join(ROOT, "generator")
LIMIT = 400


def _modules() -> list[str]:
    found = []
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith(".py") and name != "__init__.py":
                found.append(os.path.relpath(os.path.join(folder, name), PACKAGE))
    return sorted(found)


def test_the_architecture_page_names_every_module():
    with open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8") as handle:
        page = handle.read()
    missing = [module for module in _modules() if f"`{module}`" not in page]
    assert missing == [], f"docs/architecture.md does not say where these modules stand: {missing}"


def test_no_module_over_the_limit_without_a_reason_at_its_top():
    too_long = []
    for module in _modules():
        with open(os.path.join(PACKAGE, module), encoding="utf-8") as handle:
            text = handle.read()
        if text.count("\n") <= LIMIT:
            continue
        docstring = ast.get_docstring(ast.parse(text)) or ""
        if f"{LIMIT} lines" not in docstring:
            too_long.append(f"{module} ({text.count(chr(10))} lines)")
    assert too_long == [], f"over {LIMIT} lines with no reason at the top (say why, with '{LIMIT} lines'): {too_long}"


def test_the_worker_is_a_standard_library_directory_whose_modules_import_each_other_by_plain_name():
    """The worker runs as `python -I generator/verify/worker`: nothing of the generator or of a
    third-party package may be imported at its top level (a cell must be able to import nothing of
    the generator, and the GPU machine's interpreter has only what it has)."""
    import sys

    folder = os.path.join(PACKAGE, "verify", "worker")
    siblings = {name[:-3] for name in os.listdir(folder) if name.endswith(".py")}
    assert "__main__" in siblings and not os.path.exists(os.path.join(folder, "__init__.py"))
    outside = []
    for name in sorted(siblings):
        with open(os.path.join(folder, f"{name}.py"), encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
        for node in ast.walk(tree):
            modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for module in modules:
                top = module.split(".")[0]
                if top not in sys.stdlib_module_names and top not in siblings and top != "__future__":
                    outside.append(f"{name}.py imports {module}")
    assert outside == []
