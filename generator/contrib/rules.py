"""The content rules beyond the schema: what the tests used to be the only ones to enforce, enforced
where a contributor runs (`check`, `verify`, the pre-commit hook, the pull-request workflow).

The schema and the loader (load/) reject what is malformed anywhere the content is read, a GPU
machine and an environment of older releases included. These rules are about the site's own CPU
environment and the GPU it has not got: a cell that can run on a GPU must not use a CPU-only idiom
(gpulint.py), a code cell needs a check, and a `{{version:PKG}}` fact must name a distribution
installed here (`{{version:tensorflow}}` rendered "not installed": the site installs tensorflow-cpu).
Each finding is a ContentError with file:line and the fix; `RULES` gives each rule its one line,
which CONTRIBUTING.md repeats (a test checks).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from importlib import metadata

from generator.errors import ContentError
from generator.load.facts import PLACEHOLDER, VERSION_PREFIX
from generator.load.fields import suggest
from generator.model import CODE, Sheet


@dataclass(frozen=True)
class Rule:
    id: str
    line: str  # the rule in one line, as CONTRIBUTING.md states it


RULES = (
    Rule("gpu-idioms", "A cell that can run on a GPU uses no CPU-only idiom (`.numpy()` on a torch tensor, a CPU "
                       "`torch.Generator()`, the 8 host devices of the jax lane): use the portable one the error names, "
                       "or mark the cell `cpu_only:` with why."),  # fmt: skip
    Rule("check-required", "Every code cell has a `check:` that asserts what the row claims."),
    Rule("version-facts", "A `{{version:PKG}}` fact names a distribution installed here (`tensorflow-cpu`, not `tensorflow`)."),
)


def _row_selected(sheet: Sheet, row, only) -> bool:
    return only is None or row.id in only or f"{sheet.id}/{row.id}" in only


def gpu_idioms(sheets: list[Sheet], only=None) -> list[ContentError]:
    from generator.contrib import gpulint

    errors = []
    for finding in gpulint.findings(sheets):
        if only is not None and finding.row not in only and finding.row.split("/", 1)[1] not in only:
            continue
        path, line = finding.where.rsplit(":", 1)
        errors.append(ContentError(path, int(line), f"{finding.row} [{finding.column}] can run on a GPU (lane {finding.lane}): {finding.advice}; "
                                                    "or give the cell `cpu_only: <why>`, or end the line with `# gpu-ok: <why>` once checked (rule gpu-idioms)"))  # fmt: skip
    return errors


def checks_required(sheets: list[Sheet], only=None) -> list[ContentError]:
    errors = []
    for sheet in sheets:
        for row in sheet.rows():
            if not _row_selected(sheet, row, only):
                continue
            for cell in row.cells:
                if cell.kind == CODE and cell.check is None:
                    errors.append(ContentError(cell.source.path, cell.source.line, f"{sheet.id}/{row.id} [{cell.column}] is code without a `check:`: "
                                                                                    "add one that asserts what the row claims (a shape, a value computed "
                                                                                    "independently, a default the notes name) (rule check-required)"))  # fmt: skip
    return errors


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _installed() -> set[str]:
    """The canonical names of the installed distributions (what `{{version:PKG}}` reads)."""
    return {_canonical(dist.metadata["Name"]) for dist in metadata.distributions() if dist.metadata["Name"]}


def _content_files(content_dir: str):
    for folder, dirs, files in os.walk(content_dir):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".yaml"):
                yield os.path.join(folder, name)


def version_facts(content_dir: str) -> list[ContentError]:
    """Every `{{version:PKG}}` in the content's YAML files whose PKG is not installed here."""
    installed = _installed()
    errors = []
    for path in _content_files(content_dir):
        try:
            with open(path, encoding="utf-8") as handle:
                lines = handle.read().splitlines()
        except (OSError, UnicodeDecodeError):
            continue  # the loader has reported it
        for number, text in enumerate(lines, 1):
            for match in PLACEHOLDER.finditer(text):
                name = match.group(1)
                if not name.startswith(VERSION_PREFIX):
                    continue
                package = name[len(VERSION_PREFIX) :]
                if _canonical(package) in installed:
                    continue
                near = suggest(package, sorted(installed)) or _prefixed(package, installed)
                errors.append(ContentError(path, number, f"'{{{{{name}}}}}' names '{package}', which is not installed here, so the page "
                                                         f"would say 'not installed'{near}: name the distribution as installed (rule version-facts)"))  # fmt: skip
    return errors


def _prefixed(package: str, installed: set[str]) -> str:
    """" (did you mean 'x'?)" for an installed distribution whose name starts with the package's."""
    found = sorted(name for name in installed if name.startswith(_canonical(package) + "-"))
    return f" (did you mean '{found[0]}'?)" if found else ""


def findings(content_dir: str, sheets: list[Sheet], only=None) -> list[ContentError]:
    """Every rule's findings, for the rows in `only` (all rows when None); version facts everywhere."""
    return gpu_idioms(sheets, only) + checks_required(sheets, only) + version_facts(content_dir)
