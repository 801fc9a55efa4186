"""Loading and validating the content: YAML files in, frozen sheets out, every error at once.

`load(content_dir)` returns the sheets sorted for the index, or raises ContentInvalid listing every
problem found in every file, each with file:line.
"""

from __future__ import annotations

import os
import re

from generator import lanes as lane_registry
from generator.errors import ContentError, ContentInvalid
from generator.load import codeinfo, related, yamlfile
from generator.load.fields import SLUG, Reader, suggest
from generator.load.schema import (
    CELL,
    CELL_KIND_FIELDS,
    COLUMN,
    COUNTEREXAMPLE,
    EQUIVALENT_MUTANT,
    ROW,
    SAME,
    SECTION,
    SHEET,
    SHEET_PAGE,
)
from generator.model import (
    CODE,
    NONE,
    TEXT,
    Cell,
    Column,
    Counterexample,
    DeclaredMutant,
    Equivalence,
    Row,
    Section,
    Sheet,
    SheetPage,
    Source,
)

# The fields of every kind of mapping, their types and their checks are declared in
# generator/load/schema.py; this module reads with them and checks what involves more than one field.

# "(checked: label)" in a note names the check line that proves the statement: a line of a check
# in the same row that ends with the comment "# checked: label".
CHECKED_NOTE = re.compile(r"\(checked\b([^)]*)\)")
CHECKED_LABEL = re.compile(r"#\s*checked:\s*([a-z0-9][a-z0-9-]*)\s*$", re.M)


def load(content_dir: str) -> list[Sheet]:
    """Load every sheet under content_dir; raise ContentInvalid with all errors found."""
    errors: list[ContentError] = []
    sheets = []
    for name in sorted(os.listdir(content_dir)):
        sheet_file = os.path.join(content_dir, name, "sheet.yaml")
        if os.path.isfile(sheet_file):
            if not inside(sheet_file, content_dir):
                errors.append(ContentError(sheet_file, 1, OUTSIDE, quote=False))
                continue
            sheet = _load_sheet(sheet_file, content_dir, errors)
            if sheet is not None:
                sheets.append(sheet)
    _check_unique_sheet_ids(sheets, errors)
    sheets = related.check_see_also(sheets, errors)
    errors.extend(codeinfo.hidden_helper_errors(sheets))
    if errors:
        raise ContentInvalid(errors)
    return sorted(sheets, key=lambda sheet: (sheet.order, sheet.id))


# A path named in the content must resolve inside the content folder, symbolic links followed: the
# build reads what pull requests name, and an error quoting a file from elsewhere on the machine
# (the first line of /etc/passwd, a token) would print it in a public CI log. The error says nothing
# of where the path leads.
SECTION_FILE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\.yaml")
OUTSIDE = "the path leads outside the content folder (a symbolic link or '..'): content files must lie inside it"


def inside(path: str, root: str) -> bool:
    """Whether `path` (symbolic links followed) lies inside the folder `root`."""
    real, top = os.path.realpath(path), os.path.realpath(root)
    return os.path.commonpath([real, top]) == top


def _read(path: str, errors: list[ContentError]):
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        errors.append(ContentError(path, 1, f"cannot read the file: {exc}"))
        return None
    data, file_errors = yamlfile.read(path, text)
    errors.extend(file_errors)
    return data


def _load_sheet(path: str, content_dir: str, errors: list[ContentError]) -> Sheet | None:
    data = _read(path, errors)
    if data is None:
        return None
    reader = Reader(path, errors)
    sheet = reader.read(data, SHEET, 1)
    if sheet is None:
        return None
    columns = _columns(reader, sheet["columns"])
    sections = []
    folder = os.path.dirname(path)
    listed = sheet["sections"]
    for filename, line in zip(listed, listed.item_lines, strict=True):
        section_path = os.path.join(folder, filename)
        if not SECTION_FILE.fullmatch(filename):
            reader.error(line, f"a section is a file name of this sheet's folder ending in .yaml (letters, digits, '.', '_', '-'), not {filename!r}")
            continue
        if os.path.lexists(section_path) and not inside(section_path, content_dir):
            reader.error(line, f"section file {filename!r}: {OUTSIDE}")
            continue
        if not os.path.isfile(section_path):
            present = [f for f in os.listdir(folder) if f.endswith(".yaml") and f != "sheet.yaml"]
            reader.error(line, f"section file '{filename}' does not exist{suggest(filename, present)}")
            continue
        section = _load_section(section_path, columns, errors)
        if section is not None:
            sections.append(section)
    for filename in sorted(os.listdir(folder)):
        if filename.endswith(".yaml") and filename != "sheet.yaml" and filename not in listed:
            reader.error(sheet.at("sections"), f"section file '{filename}' is not listed in 'sections'")
    _check_unique_row_ids(sections, errors)
    return Sheet(
        id=sheet["id"],
        title=sheet["title"],
        source=Source(path, 1),
        columns=tuple(columns),
        sections=tuple(sections),
        description=sheet["description"],
        order=sheet["order"],
        pages=_pages(reader, sheet, sections),
    )


def _pages(reader: Reader, sheet, sections: list[Section]) -> tuple[SheetPage, ...]:
    """The sheet's pages: every listed section in exactly one, consecutive and in the sheet's order."""
    if not sheet.given("pages"):
        return ()
    files = {name: index for index, name in enumerate(sheet["sections"])}
    ids = {os.path.basename(section.source.path): section.id for section in sections}
    pages, seen, expected, page_ids = [], {}, 0, set()
    for item, line in zip(sheet["pages"], sheet["pages"].item_lines, strict=True):
        page = reader.read(item, SHEET_PAGE, line)
        if page is None:
            continue
        if page["id"] in page_ids:
            reader.error(line, f"duplicate page id '{page['id']}'")
        page_ids.add(page["id"])
        for name in page["sections"]:
            if name not in files:
                reader.error(line, f"page '{page['id']}' names '{name}', which is not in 'sections'{suggest(name, list(files))}")
            elif name in seen:
                reader.error(line, f"section '{name}' is on page '{seen[name]}' already: a section belongs to one page")
            elif files[name] != expected:
                reader.error(line, f"page '{page['id']}' lists '{name}' out of order: pages take the sections consecutively, in the order of 'sections'")
            else:
                expected += 1
            seen.setdefault(name, page["id"])
        pages.append(SheetPage(page["id"], page["title"], tuple(ids[n] for n in page["sections"] if n in ids)))
    left = [name for name in files if name not in seen]
    if left:
        reader.error(sheet.at("pages"), f"these sections are on no page: {', '.join(left)}")
    return tuple(pages)


def _columns(reader: Reader, items) -> list[Column]:
    columns = []
    seen: dict[str, int] = {}
    for item, line in zip(items, items.item_lines, strict=True):
        column = reader.read(item, COLUMN, line)
        if column is None:
            continue
        if column["id"] in seen:
            reader.error(column.at("id"), f"duplicate column id '{column['id']}' (first on line {seen[column['id']]})")
        seen[column["id"]] = column.at("id")
        columns.append(Column(column["id"], column["name"], column["lanes"], column["note"]))
    return columns


def _load_section(path: str, columns: list[Column], errors: list[ContentError]) -> Section | None:
    data = _read(path, errors)
    if data is None:
        return None
    reader = Reader(path, errors)
    section = reader.read(data, SECTION, 1)
    if section is None:
        return None
    rows = []
    for item in section["rows"]:
        row = _row(reader, item, columns, section.line)
        if row is not None:
            rows.append(row)
    return Section(section["id"], section["title"], Source(path, section.line), tuple(rows))


def _row(reader: Reader, item, columns: list[Column], line: int) -> Row | None:
    row = reader.read(item, ROW, line)
    if row is None:
        return None
    cells = []
    value = row["cells"]
    column_ids = [column.id for column in columns]
    if value is not None:
        for key in value:
            if key not in column_ids:
                reader.error(value.key_lines[key], f"unknown column '{key}'{suggest(key, column_ids)}")
        for column in columns:
            if column.id not in value:
                reader.error(value.line, f"row '{row.data.get('id')}' has no cell for column '{column.id}'")
                continue
            cell = _cell(reader, value[column.id], column, value.key_lines[column.id])
            if cell is not None:
                cells.append(cell)
    same = _same(reader, row["same"], row.at("same"), cells) if row.given("same") else None
    labels = {label for cell in cells if cell.check is not None for label in CHECKED_LABEL.findall(cell.check.text)}
    differs = related.differences(reader, row["differs"], cells, labels)
    if row["notes"]:
        _check_checked_notes(reader, row["notes"], row.content_line("notes"), cells)
    return Row(
        id=row["id"],
        title=row["title"],
        source=Source(reader.path, row.line),
        cells=tuple(cells),
        notes=row["notes"],
        timeout=row["timeout"],
        same=same,
        differs=differs,
        see_also=related.see_also(reader, row["see_also"]),
    )


def _same(reader: Reader, item, line: int, cells: list[Cell]) -> Equivalence | None:
    same = reader.read(item, SAME, line)
    if same is None:
        return None
    code_columns = [cell.column for cell in cells if cell.kind == CODE]
    listed = same["columns"]
    for column, column_line in zip(listed, listed.item_lines, strict=True):
        if column not in code_columns:
            reader.error(column_line, f"column '{column}' has no code cell in this row{suggest(column, code_columns)}")
    columns = tuple(str(c) for c in listed)
    compared = columns or tuple(code_columns)
    lane_count = sum(len(cell.lanes) for cell in cells if cell.kind == CODE and cell.column in compared)
    if lane_count < 2:
        reader.error(same.line, "'same' needs at least two code cells (or lanes) to compare")
    return Equivalence(
        value=same["value"],
        source=Source(reader.path, same.line),
        rtol=same["rtol"],
        atol=same["atol"],
        dtype=same["dtype"],
        columns=columns,
    )


def checked_labels(match: re.Match) -> list[str]:
    """The labels a "(checked: a, b)" match names."""
    return [label.strip() for label in match.group(1).lstrip(":").split(",")]


def _check_checked_notes(reader: Reader, notes: str, line: int, cells: list[Cell]) -> None:
    """Every "(checked…)" in a note names a labelled line of one of the row's checks."""
    labels = set()
    for cell in cells:
        if cell.check is not None:
            labels.update(CHECKED_LABEL.findall(cell.check.text))
    for match in CHECKED_NOTE.finditer(notes):
        at = line + notes.count("\n", 0, match.start())
        named = checked_labels(match)
        if not match.group(1).startswith(":") or not all(SLUG.match(label) for label in named):
            reader.error(at, "'(checked)' must name the check line that proves it: write '(checked: LABEL)' and end that line of a check in this row with '# checked: LABEL'")
            continue
        for label in named:
            if label not in labels:
                known = f"; this row's labels: {', '.join(sorted(labels))}" if labels else ""
                reader.error(at, f"'(checked: {label})' names no check line: no check in this row has a line ending in '# checked: {label}'{known}")


def _cell(reader: Reader, item, column: Column, line: int) -> Cell | None:
    data = reader.mapping(item, CELL, line)
    if data is None:
        return None
    kinds = [kind for kind in (CODE, TEXT, NONE) if kind in data]
    if len(kinds) != 1:
        what = "none of" if not kinds else "more than one of"
        reader.error(data.line, f"a cell needs exactly one of 'code', 'text' or 'none'; this one has {what} them")
        return None
    kind = kinds[0]
    for key in data:
        if key in CELL.fields and key not in CELL_KIND_FIELDS[kind]:
            reader.error(data.key_lines[key], f"'{key}' does not belong in a {kind} cell")
    cell = reader.values(data, CELL, only=CELL_KIND_FIELDS[kind])
    source = Source(reader.path, data.line)
    if kind == TEXT:
        return Cell(column.id, TEXT, source, text=cell["text"], url=cell["source"])
    if kind == NONE:
        return Cell(column.id, NONE, source, reason=cell["none"])
    lanes = cell["lanes"] if cell.given("lanes") else column.lanes
    if not cell.given("lanes") and not lanes:
        reader.error(data.line, f"column '{column.id}' has no lanes, so its code cells must name theirs")
    cpu_only, gpu_only = cell["cpu_only"], cell["gpu_only"]
    if cpu_only and gpu_only:
        reader.error(cell.at("gpu_only"), "a cell cannot be both 'cpu_only' and 'gpu_only'")
    if gpu_only and not any(name in lane_registry.GPU_LANES for name in lanes):
        reader.error(cell.at("gpu_only"), f"'gpu_only' needs a lane that can use a GPU ({', '.join(lane_registry.GPU_LANES)})")
    counterexamples = _counterexamples(reader, cell["counterexamples"])
    if counterexamples and cell["check"] is None:
        reader.error(cell.at("counterexamples"), "counterexamples need a 'check' that rejects them")
    return Cell(
        column=column.id,
        kind=CODE,
        source=source,
        code=cell["code"],
        setup=cell["setup"],
        check=cell["check"],
        lanes=lanes,
        counterexamples=counterexamples,
        equivalent_mutants=_declared_mutants(reader, cell["equivalent_mutants"]),
        cpu_only=cpu_only,
        gpu_only=gpu_only,
    )


def _counterexamples(reader: Reader, items) -> tuple[Counterexample, ...]:
    out = []
    for item, line in zip(items, items.item_lines, strict=True):
        example = reader.read(item, COUNTEREXAMPLE, line)
        if example is not None and example["code"] is not None:
            out.append(Counterexample(code=example["code"], why=example["why"], source=Source(reader.path, example.line), raises=example["raises"]))
    return tuple(out)


def _declared_mutants(reader: Reader, items) -> tuple[DeclaredMutant, ...]:
    out = []
    for item, line in zip(items, items.item_lines, strict=True):
        declared = reader.read(item, EQUIVALENT_MUTANT, line)
        if declared is not None and declared["mutant"] is not None:
            out.append(DeclaredMutant(declared["mutant"], declared["why"], Source(reader.path, declared.line)))
    return tuple(out)


def _check_unique_row_ids(sections: list[Section], errors: list[ContentError]) -> None:
    seen: dict[str, Row] = {}
    for section in sections:
        for row in section.rows:
            if row.id in seen:
                first = seen[row.id].source
                errors.append(ContentError(row.source.path, row.source.line, f"duplicate row id '{row.id}' (first used at {first})"))
            else:
                seen[row.id] = row


def _check_unique_sheet_ids(sheets: list[Sheet], errors: list[ContentError]) -> None:
    seen: dict[str, Sheet] = {}
    for sheet in sheets:
        if sheet.id in seen:
            errors.append(ContentError(sheet.source.path, 1, f"duplicate sheet id '{sheet.id}' (also {seen[sheet.id].source.path})"))
        seen[sheet.id] = sheet
