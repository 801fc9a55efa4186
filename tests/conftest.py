"""Shared fixtures: small content trees written on the fly, and a runner for a handful of cells."""

from __future__ import annotations

import os
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from generator import content  # noqa: E402
from generator.cache import Cache  # noqa: E402
from generator.verify import verify  # noqa: E402

SHEET = """\
id: {sheet_id}
title: Test sheet
columns:
{columns}
sections: [{sections}]
"""


def write_content(root, sections: dict[str, str], columns=(("pytorch", "python"), ("jax", "python")), sheet_id="t"):
    """Write a sheet folder under root/sheet_id with the given section files; return the content dir."""
    folder = os.path.join(str(root), sheet_id)
    os.makedirs(folder, exist_ok=True)
    cols = "\n".join(f"  - {{id: {cid}, name: {cid.title()}, lanes: [{lane}]}}" for cid, lane in columns)
    with open(os.path.join(folder, "sheet.yaml"), "w", encoding="utf-8") as handle:
        handle.write(SHEET.format(sheet_id=sheet_id, columns=cols, sections=", ".join(sections)))
    for name, text in sections.items():
        with open(os.path.join(folder, name), "w", encoding="utf-8") as handle:
            handle.write(textwrap.dedent(text))
    return str(root)


def code_row(row_id: str, code: str, check: str = "", lane: str = "python", timeout: float | None = None) -> str:
    """A row whose first column runs `code` (then `check`) in `lane`; the second column is text."""
    def block(text: str) -> str:
        return textwrap.indent(textwrap.dedent(text).strip("\n") + "\n", " " * 10)

    parts = [f"  - id: {row_id}", f"    title: {row_id}"]
    if timeout is not None:
        parts.append(f"    timeout: {timeout}")
    parts += ["    cells:", "      pytorch:", f"        lanes: [{lane}]", "        code: |", block(code).rstrip("\n")]
    if check:
        parts += ["        check: |", block(check).rstrip("\n")]
    parts += ["      jax: {text: fact}"]
    return "\n".join(parts) + "\n"


def section(*rows: str, section_id: str = "s") -> str:
    return f"id: {section_id}\ntitle: Section\nrows:\n" + "".join(rows)


@pytest.fixture
def run_rows(tmp_path):
    """Run rows (from code_row) and return {row id: (status, result)} for their code cells."""

    def run(*rows: str, cores: int = 2, memory_cap: int | None = None, force: bool = True):
        root = write_content(tmp_path / "content", {"s.yaml": section(*rows)})
        sheets = content.load(root)
        verification = verify(
            sheets, cache=Cache(str(tmp_path / "cache")), cores=cores, force=force, show_progress=False, memory_cap=memory_cap
        )
        return {row: verdict.results[0][1] for (_, row, _), verdict in verification.verdicts.items()}

    return run
