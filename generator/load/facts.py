"""Facts about the site's own data, computed at build time so that prose cannot drift from it.

A note, a sheet description or a guide/trade-off text writes `{{keras-cells-all-backends}}` where
it would otherwise type a number that goes stale: how many Keras cells run on every backend, how
many rows there are, which version of a package the cells ran with (`{{version:torch}}`). `check`
rejects an unknown name with its file:line; the build replaces each name with its value.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from generator.lanes import LANES
from generator.model import CODE, Sheet

PLACEHOLDER = re.compile(r"\{\{\s*([a-z0-9][a-z0-9:.-]*)\s*\}\}")
KERAS_LANES = tuple(name for name in LANES if name.startswith("keras@"))


def _keras_cells(sheets: list[Sheet]) -> list:
    return [
        cell
        for sheet in sheets
        for row in sheet.rows()
        for cell in row.cells
        if cell.kind == CODE and any(lane in KERAS_LANES for lane in cell.lanes)
    ]


def _code_cells(sheets: list[Sheet]) -> list:
    return [cell for sheet in sheets for row in sheet.rows() for cell in row.cells if cell.kind == CODE]


# name -> (what it means, how to compute it from the sheets)
FACTS: dict[str, tuple[str, Callable[[list[Sheet]], object]]] = {
    "sheets": ("how many sheets the site has", lambda sheets: len(sheets)),
    "rows": ("how many rows all sheets have", lambda sheets: sum(1 for s in sheets for _ in s.rows())),
    "code-cells": ("how many code cells all sheets have", lambda sheets: len(_code_cells(sheets))),
    "cell-runs": (
        "how many cell runs verify the code cells on CPU (a cell runs once per lane)",
        lambda sheets: sum(len(cell.lanes) for cell in _code_cells(sheets)),
    ),
    "counterexamples": (
        "how many counterexamples the cells carry",
        lambda sheets: sum(len(cell.counterexamples) for cell in _code_cells(sheets)),
    ),
    "keras-code-cells": ("how many code cells run in a Keras lane", lambda sheets: len(_keras_cells(sheets))),
    "keras-cells-all-backends": (
        "how many of those run on all three Keras backends",
        lambda sheets: sum(all(lane in cell.lanes for lane in KERAS_LANES) for cell in _keras_cells(sheets)),
    ),
    "keras-cells-fewer-backends": (
        "how many Keras code cells run on fewer than three backends",
        lambda sheets: sum(not all(lane in cell.lanes for lane in KERAS_LANES) for cell in _keras_cells(sheets)),
    ),
}
VERSION_PREFIX = "version:"


def known(name: str) -> bool:
    return name in FACTS or (name.startswith(VERSION_PREFIX) and len(name) > len(VERSION_PREFIX))


def validate(reader, text: str, line: int) -> None:
    """Report every unknown fact name in `text` (which starts on `line`) through `reader.error`."""
    for match in PLACEHOLDER.finditer(text):
        name = match.group(1)
        if not known(name):
            at = line + text.count("\n", 0, match.start())
            reader.error(at, f"unknown fact '{{{{{name}}}}}'; known: {', '.join(sorted(FACTS))}, version:PACKAGE")


def compute(sheets: list[Sheet]) -> dict[str, str]:
    """Every fact's value as text."""
    return {name: str(make(sheets)) for name, (_, make) in FACTS.items()}


def expand(text: str, values: dict[str, str]) -> str:
    """`text` with every `{{name}}` replaced by its value (a version from the installed metadata)."""
    if "{{" not in text:
        return text

    def value(match: re.Match) -> str:
        name = match.group(1)
        if name.startswith(VERSION_PREFIX):
            from generator.versions import package_version

            return package_version(name[len(VERSION_PREFIX) :])
        return values.get(name, match.group(0))

    return PLACEHOLDER.sub(value, text)
