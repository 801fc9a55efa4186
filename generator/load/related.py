"""How a row relates to others: the differences it declares between its columns (`differs`, which
the compare view shows) and the rows elsewhere that answer the same task (`see_also`, checked to
exist once every sheet is loaded)."""

from __future__ import annotations

import re
from dataclasses import replace

from generator.errors import ContentError
from generator.load.fields import Reader, suggest
from generator.load.schema import DIFFERENCE
from generator.model import Cell, Difference, SeeAlso, Sheet, Source

SEE_ALSO = re.compile(r"(?:([a-z0-9][a-z0-9-]*)/)?([a-z0-9][a-z0-9-]*)")


def see_also(reader: Reader, items) -> tuple[SeeAlso, ...]:
    """`sheet/row` references (a bare `row` is on this sheet, filled in by check_see_also)."""
    out = []
    for ref, line in zip(items, items.item_lines, strict=True):
        match = SEE_ALSO.fullmatch(str(ref))
        if not match:
            reader.error(line, f"'{ref}' is not a row reference: write 'sheet/row', or 'row' for a row of this sheet")
            continue
        out.append(SeeAlso(match.group(1) or "", match.group(2), Source(reader.path, line)))
    return tuple(out)


def differences(reader: Reader, items, cells: list[Cell], labels: set[str]) -> tuple[Difference, ...]:
    """A row's declared differences: their columns exist in the row, and a `checked` label is one of
    `labels`, the labelled lines of the row's checks."""
    column_ids = [cell.column for cell in cells]
    out = []
    for item, line in zip(items, items.item_lines, strict=True):
        declared = reader.read(item, DIFFERENCE, line)
        if declared is None or declared["what"] is None:
            continue
        listed = declared["columns"]
        for column, column_line in zip(listed, listed.item_lines, strict=True):
            if column not in column_ids:
                reader.error(column_line, f"unknown column '{column}'{suggest(column, column_ids)}")
        if listed and len(listed) >= len(column_ids):
            reader.error(declared.at("columns"), "'columns' names the columns set apart from the others: leave it out when every column differs")
        checked = declared["checked"] or ""
        if checked and checked not in labels:
            known = f"; this row's labels: {', '.join(sorted(labels))}" if labels else ""
            reader.error(declared.at("checked"), f"'checked: {checked}' names no check line: no check in this row has a line ending in '# checked: {checked}'{known}")
        out.append(Difference(declared["what"], Source(reader.path, declared.line), tuple(str(c) for c in listed), checked))
    return tuple(out)


def check_see_also(sheets: list[Sheet], errors: list[ContentError]) -> list[Sheet]:
    """Every `see_also` names a row that exists (a bare row id is on the row's own sheet, and is
    filled in), and not the row itself."""
    rows = {sheet.id: {row.id for row in sheet.rows()} for sheet in sheets}
    every = sorted(f"{sheet_id}/{row_id}" for sheet_id, ids in rows.items() for row_id in ids)
    out = []
    for sheet in sheets:
        sections = []
        for section in sheet.sections:
            section_rows = []
            for row in section.rows:
                refs = []
                for ref in row.see_also:
                    target = replace(ref, sheet=ref.sheet or sheet.id)
                    name = f"{target.sheet}/{target.row}"
                    if target.row not in rows.get(target.sheet, ()):
                        errors.append(ContentError(ref.source.path, ref.source.line, f"see_also '{name}' names no row{suggest(name, every)}"))
                    elif (target.sheet, target.row) == (sheet.id, row.id):
                        errors.append(ContentError(ref.source.path, ref.source.line, "see_also names the row itself"))
                    else:
                        refs.append(target)
                section_rows.append(replace(row, see_also=tuple(refs)) if row.see_also else row)
            sections.append(replace(section, rows=tuple(section_rows)))
        out.append(replace(sheet, sections=tuple(sections)))
    return out
