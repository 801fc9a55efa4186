"""`new-row SHEET SECTION "Title"`: append a row skeleton with one placeholder cell per column.

A placeholder cell raises NotImplementedError, so it fails verification (naming its file and
line) until someone fills it in; it can never be published as verified.
"""

from __future__ import annotations

import os
import re

from generator.errors import ContentError, ContentInvalid
from generator.lanes import LANES
from generator.load import content
from generator.load.fields import suggest

PLACEHOLDER = "placeholder: replace with the {name} snippet"


def slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "row"


def _indent(text: str, spaces: int) -> str:
    return "".join(" " * spaces + line + "\n" for line in text.splitlines())


def skeleton(row_id: str, title: str, columns) -> str:
    lines = [f"  - id: {row_id}", f"    title: {_quote(title)}", "    notes: |", "      What differs between the frameworks here, in a sentence or two.", "    cells:"]
    for column in columns:
        name = column.name
        lines.append(f"      {column.id}:")
        lines.append("        setup: |")
        lines.append(_indent(LANES[column.lanes[0] if column.lanes else "python"].skeleton, 10).rstrip("\n"))
        lines.append("        code: |")
        lines.append(_indent(f'raise NotImplementedError("{PLACEHOLDER.format(name=name)}")', 10).rstrip("\n"))
        lines.append("        check: |")
        lines.append(_indent('raise NotImplementedError("placeholder: assert what the row claims")', 10).rstrip("\n"))
    return "\n".join(lines) + "\n"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def new_row(content_dir: str, sheet_id: str, section: str, title: str, row_id: str | None = None) -> tuple[str, str, int]:
    """Append the skeleton; return (row id, file, line). Raises ContentInvalid if it cannot."""
    sheets = {sheet.id: sheet for sheet in content.load(content_dir)}
    if sheet_id not in sheets:
        raise ContentInvalid([ContentError(content_dir, 1, f"no sheet '{sheet_id}'{suggest(sheet_id, sheets)}")])
    sheet = sheets[sheet_id]
    by_id = {s.id: s for s in sheet.sections}
    by_file = {os.path.basename(s.source.path): s for s in sheet.sections}
    target = by_id.get(section) or by_file.get(section)
    if target is None:
        raise ContentInvalid([ContentError(sheet.source.path, 1, f"no section '{section}' in sheet '{sheet_id}'{suggest(section, [*by_id, *by_file])}")])
    row_id = row_id or slug(title)
    taken = {row.id for row in sheet.rows()}
    if row_id in taken:
        raise ContentInvalid([ContentError(target.source.path, 1, f"row id '{row_id}' is taken in sheet '{sheet_id}': pass --id")])
    path = target.source.path
    with open(path, encoding="utf-8") as handle:
        before = handle.read()
    if not before.endswith("\n"):
        before += "\n"
    if re.search(r"^rows:[ \t]*\[\][ \t]*$", before, flags=re.M):  # not \s: it took the newline, and the row joined 'rows:'
        before = re.sub(r"^rows:[ \t]*\[\][ \t]*$", "rows:", before, flags=re.M)
    line = before.count("\n") + 1
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(before + skeleton(row_id, title, sheet.columns))
    try:
        content.load(content_dir)
    except ContentInvalid:
        with open(path, "w", encoding="utf-8") as handle:  # leave the file as it was
            handle.write(before)
        raise ContentInvalid([ContentError(path, line, "could not append a row here: is 'rows' the last field of this section file?")]) from None
    return row_id, path, line
