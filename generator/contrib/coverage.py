"""`coverage`: per sheet, rows × columns — which cells are none, which lack a check, which have
only CPU results."""

from __future__ import annotations

from generator.contrib import gpulint
from generator.model import CODE, NONE, TEXT

MARKS = {"checked": "✓", "unchecked": "?", "text": "T", "none": "·"}


def sheet_coverage(sheet, verification=None) -> dict:
    """Counts and a grid of marks for one sheet; GPU figures when ledgers are merged in."""
    grid, counts = [], {"rows": 0, "code": 0, "checked": 0, "unchecked": 0, "text": 0, "none": 0, "gpu": 0, "cpu_only": 0}
    unchecked, nones = [], []
    for row in sheet.rows():
        counts["rows"] += 1
        marks = []
        for cell in row.cells:
            if cell.kind == CODE:
                counts["code"] += 1
                kind = "checked" if cell.check else "unchecked"
                if not cell.check:
                    unchecked.append(f"{cell.source} {row.id} [{cell.column}]")
                runs = verification.gpu.get((sheet.id, row.id, cell.column), ()) if verification else ()
                if any(run.counts for run in runs):
                    counts["gpu"] += 1
                else:
                    counts["cpu_only"] += 1
            elif cell.kind == TEXT:
                kind = "text"
            else:
                kind = NONE
                nones.append(f"{row.id} [{cell.column}]: {cell.reason}")
            counts[kind] += 1
            marks.append(MARKS[kind])
        grid.append((row.id, marks))
    return {"counts": counts, "grid": grid, "unchecked": unchecked, "none": nones}


def report(sheets, verification=None) -> str:
    lines = [f"legend: {MARKS['checked']} code with a check, {MARKS['unchecked']} code without a check, {MARKS['text']} text, {MARKS['none']} none"]
    for sheet in sheets:
        cov = sheet_coverage(sheet, verification)
        c = cov["counts"]
        lines.append(f"\n{sheet.id}: {c['rows']} rows; {c['code']} code cells ({c['checked']} with a check, {c['unchecked']} without), "
                     f"{c['text']} text, {c['none']} none; {c['gpu']} code cells passed on a GPU, {c['cpu_only']} have CPU results only")
        width = max((len(row) for row, _ in cov["grid"]), default=4)
        lines.append(f"  {'row':{width}}  " + " ".join(col.id[:8].ljust(8) for col in sheet.columns))
        for row, marks in cov["grid"]:
            lines.append(f"  {row:{width}}  " + " ".join(mark.ljust(8) for mark in marks))
        for entry in cov["unchecked"]:
            lines.append(f"  no check: {entry}")
        for entry in cov["none"]:
            lines.append(f"  none: {entry}")
    lint = gpulint.findings(sheets)
    lines.append(f"\nGPU lint: {len(lint)} CPU-only idiom(s) in cells that claim to run on a GPU (python -m generator.contrib.gpulint lists them)")
    return "\n".join(lines)
