"""The compare view's "differences only": which rows two columns behave differently on, and why,
from the data rather than from the API names (which differ on nearly every row).

Two columns of a row differ when:
- the row declares a difference that sets one apart from the other (`differs:`, a default, a dtype,
  a keyword; docs/schema.md);
- a counterexample of one is the other's idiom: the wrong snippet calls an API or passes a keyword
  that the other column's code uses and its own does not (`axis=` in PyTorch, `segment_sum` on
  unsorted ids in TensorFlow);
- both are code and no `same:` proof covers the two (nothing shows they compute the same);
- both are facts that say different things, or one is code and the other a fact.

The page's script (static/reader.js, `reasons`) does the same from the search index, which carries
each row's ingredients (`row_data`); `compare_pairs` counts them for compare.html, and the browser
tests check that the two agree.
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace
from itertools import combinations

from generator.load import codeinfo
from generator.model import CODE, NONE, TEXT, Sheet
from generator.verify.verification import Verification

_SPACE = re.compile(r"\s+")
_DISTINCT = re.compile(r"[A-Z_]")  # an API name specific enough to be an idiom: snake_case or CamelCase


def idiom_marks(cell, code: str) -> set[str]:
    """What code is recognisable by: the distinctive API names it calls (their last part, when
    snake_case or CamelCase: `segment_sum`, `BinaryAccuracy`; `sum` or `norm` say nothing) and the
    keywords it passes (`axis=`)."""
    marks = {leaf for leaf in (codeinfo.leaf(name) for name in codeinfo.api_names(replace(cell, code=replace(cell.code, text=code)))) if _DISTINCT.search(leaf)}
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return marks
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            marks.update(f"{keyword.arg}=" for keyword in node.keywords if keyword.arg)
    return marks


def idioms(cell, other) -> list[str]:
    """The other column's idioms a counterexample of `cell` uses: marks of the wrong snippet that the
    other cell's code has and this cell's code has not."""
    if cell.kind != CODE or other.kind != CODE or not cell.code or not other.code:
        return []
    own = idiom_marks(cell, cell.code.text)
    theirs = idiom_marks(other, other.code.text) - own
    found: list[str] = []
    for counterexample in cell.counterexamples:
        for mark in sorted((idiom_marks(cell, counterexample.code.text) - own) & theirs):
            if mark not in found:
                found.append(mark)
    return found


def proven_same(sheet_id: str, row, verification: Verification) -> list[str]:
    """The columns a `same:` proof of the row covers (none when it was not proven in this build)."""
    outcome = verification.same.get((sheet_id, row.id))
    return list(outcome.columns) if outcome and outcome.proven else []


def row_data(sheet: Sheet, row, verification: Verification) -> dict:
    """What the page's script needs to tell the row's differences for any two columns: `s` the
    columns proven the same, `d` the declared differences ([what, columns, checked label]), `i` the idioms
    ([column, other column, [marks]]). Empty parts are left out."""
    cells = {cell.column: cell for cell in row.cells}
    data: dict = {}
    same = proven_same(sheet.id, row, verification)
    if same:
        data["s"] = same
    if row.differs:
        data["d"] = [[d.what, list(d.columns), d.checked] for d in row.differs]
    found = []
    for a, b in combinations([c.id for c in sheet.columns], 2):
        for x, y in ((a, b), (b, a)):
            marks = idioms(cells[x], cells[y])
            if marks:
                found.append([x, y, marks])
    if found:
        data["i"] = found
    return data


def _text(cell) -> str:
    return _SPACE.sub(" ", cell.text.strip().lower())


def reasons(sheet: Sheet, row, a: str, b: str, verification: Verification, names: dict[str, str] | None = None) -> list[str] | None:
    """Why the row shows under "differences only" when columns `a` and `b` are compared: [] when they
    behave the same, None when one of them lacks the feature (a "none" cell: shown only when asked)."""
    names = names or {column.id: column.name for column in sheet.columns}
    cells = {cell.column: cell for cell in row.cells}
    ca, cb = cells[a], cells[b]
    if ca.kind == NONE or cb.kind == NONE:
        return None
    out = [d.what for d in row.differs if d.between(a, b)]
    for x, y in ((a, b), (b, a)):
        marks = idioms(cells[x], cells[y])
        if marks:
            out.append(f"a wrong snippet of {names[x]} uses {names[y]}'s {', '.join(marks)}")
    if ca.kind == CODE and cb.kind == CODE:
        same = proven_same(sheet.id, row, verification)
        if not (a in same and b in same):
            out.append("not proven to compute the same")
    elif ca.kind == TEXT and cb.kind == TEXT:
        if _text(ca) != _text(cb):
            out.append("the facts differ")
    else:
        out.append("code in one, a fact in the other")
    return out


def compare_pairs(sheets: list[Sheet], verification: Verification) -> list[dict]:
    """For every two columns that share a sheet: per sheet (per page of a sheet split into pages), rows
    in all, rows where they differ (`reasons`), and rows one or both lack. The compare page lists these;
    the sheet page's view agrees with them (the browser tests check)."""
    pairs: dict[tuple[str, str], dict] = {}
    names: dict[str, str] = {}
    for sheet in sheets:
        for column in sheet.columns:
            names.setdefault(column.id, column.name)
        parts = sheet.parts()
        for a, b in combinations(sheet.columns, 2):
            entry = pairs.setdefault((a.id, b.id), {"a": a.id, "b": b.id, "sheets": []})
            for part, path, sections in parts:  # a sheet split into pages: each page, which shows its own rows
                total = differ = lacking = 0
                for row in (row for section in sections for row in section.rows):
                    total += 1
                    why = reasons(sheet, row, a.id, b.id, verification)
                    if why is None:
                        lacking += 1
                    elif why:
                        differ += 1
                title = f"{sheet.title}: {part.title}" if len(parts) > 1 else sheet.title
                entry["sheets"].append({"id": path.removesuffix(".html"), "title": title, "rows": total, "differ": differ, "lacking": lacking})
    out = sorted(pairs.values(), key=lambda p: (-len(p["sheets"]), names[p["a"]], names[p["b"]]))
    for pair in out:
        pair["a_name"], pair["b_name"] = names[pair["a"]], names[pair["b"]]
    return out
