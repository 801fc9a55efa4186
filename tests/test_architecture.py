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
