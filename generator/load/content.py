"""Loading and validating the content: YAML files in, frozen sheets out, every error at once.

`load(content_dir)` returns the sheets sorted for the index, or raises ContentInvalid listing every
problem found in every file, each with file:line.
"""

from __future__ import annotations

import ast
import difflib
import os
import re
from dataclasses import dataclass

from generator.errors import ContentError, ContentInvalid
from generator.load import codeinfo, facts, yamlfile
from generator.load.yamlfile import Map, Seq
from generator.model import (
    CODE,
    NONE,
    TEXT,
    Cell,
    Column,
    Counterexample,
    Equivalence,
    Row,
    Section,
    Sheet,
    Snippet,
    Source,
)
from generator.verify import lanes as lane_registry

SLUG = re.compile(r"^[a-z0-9][a-z0-9-]*$")
DEFAULT_TIMEOUT = 60.0

# The schema: for each kind of mapping, its fields and whether each is required.
# docs/schema.md documents every one of these; tests/test_docs.py keeps the two in step.
SCHEMA: dict[str, dict[str, bool]] = {
    "sheet": {"id": True, "title": True, "description": False, "order": False, "columns": True, "sections": True},
    "column": {"id": True, "name": True, "lanes": True, "note": False},
    "section": {"id": True, "title": True, "rows": True},
    "row": {"id": True, "title": True, "notes": False, "timeout": False, "same": False, "cells": True},
    "same": {"value": True, "rtol": False, "atol": False, "dtype": False, "columns": False},
    "cell": {
        "code": False,
        "setup": False,
        "check": False,
        "lanes": False,
        "counterexamples": False,
        "cpu_only": False,
        "gpu_only": False,
        "text": False,
        "source": False,
        "none": False,
    },
    "counterexample": {"code": True, "why": True, "raises": False},
}
CELL_KIND_FIELDS = {
    CODE: {"code", "setup", "check", "lanes", "counterexamples", "cpu_only", "gpu_only"},
    TEXT: {"text", "source"},
    NONE: {"none"},
}
# "(checked: label)" in a note names the check line that proves the statement: a line of a check
# in the same row that ends with the comment "# checked: label".
CHECKED_NOTE = re.compile(r"\(checked\b([^)]*)\)")
CHECKED_LABEL = re.compile(r"#\s*checked:\s*([a-z0-9][a-z0-9-]*)\s*$", re.M)


@dataclass
class _Reader:
    """Collects errors while turning located YAML data into model objects."""

    path: str
    errors: list
    schema = SCHEMA  # kind -> {field: required}; the guide and trade-off reader has its own

    def error(self, line: int, message: str) -> None:
        self.errors.append(ContentError(self.path, line, message))

    def mapping(self, data, kind: str, line: int) -> Map | None:
        if not isinstance(data, Map):
            self.error(getattr(data, "line", line), f"a {kind} must be a mapping")
            return None
        fields = self.schema[kind]
        for key in data:
            if key not in fields:
                self.error(data.key_lines[key], f"unknown field '{key}' in {kind}{_suggest(key, fields)}")
        for key, required in fields.items():
            if required and key not in data:
                self.error(data.line, f"{kind} is missing the required field '{key}'")
        return data

    def string(self, data: Map, key: str, *, slug: bool = False, required: bool = True) -> str:
        value = data.get(key)
        if value is None:
            return ""
        line = data.key_lines[key]
        if not isinstance(value, str) or (required and not value.strip()):
            self.error(line, f"'{key}' must be a non-empty string")
            return ""
        if slug and not SLUG.match(value):
            self.error(line, f"'{key}' must be a slug (lower-case letters, digits and '-'): '{value}'")
        return str(value)

    def snippet(self, data: Map, key: str) -> Snippet | None:
        value = data.get(key)
        if value is None:
            return None
        line = data.key_lines[key]
        if not isinstance(value, yamlfile.Text) or not value.strip():
            self.error(line, f"'{key}' must be Python source text")
            return None
        if value.style == ">":
            self.error(line, f"'{key}' must be a literal block ('|'), not a folded one ('>')")
            return None
        snippet = Snippet(str(value), value.content_line)
        try:
            ast.parse(snippet.text, filename=self.path)
        except SyntaxError as exc:
            bad_line = snippet.line + (exc.lineno or 1) - 1
            self.error(bad_line, f"'{key}' is not valid Python: {exc.msg}")
        return snippet


def _suggest(word: str, choices) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def load(content_dir: str) -> list[Sheet]:
    """Load every sheet under content_dir; raise ContentInvalid with all errors found."""
    errors: list[ContentError] = []
    sheets = []
    for name in sorted(os.listdir(content_dir)):
        sheet_file = os.path.join(content_dir, name, "sheet.yaml")
        if os.path.isfile(sheet_file):
            sheet = _load_sheet(sheet_file, errors)
            if sheet is not None:
                sheets.append(sheet)
    _check_unique_sheet_ids(sheets, errors)
    errors.extend(codeinfo.hidden_helper_errors(sheets))
    if errors:
        raise ContentInvalid(errors)
    return sorted(sheets, key=lambda sheet: (sheet.order, sheet.id))


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


def _load_sheet(path: str, errors: list[ContentError]) -> Sheet | None:
    data = _read(path, errors)
    if data is None:
        return None
    reader = _Reader(path, errors)
    data = reader.mapping(data, "sheet", 1)
    if data is None:
        return None
    sheet_id = reader.string(data, "id", slug=True)
    columns = _columns(reader, data.get("columns"), data.key_lines.get("columns", data.line))
    order = data.get("order", 100)
    if not isinstance(order, int) or isinstance(order, bool):
        reader.error(data.key_lines.get("order", data.line), "'order' must be an integer")
        order = 100
    sections = []
    folder = os.path.dirname(path)
    listed = data.get("sections")
    if listed is not None and not (isinstance(listed, Seq) and all(isinstance(f, str) for f in listed)):
        reader.error(data.key_lines["sections"], "'sections' must be a list of file names")
        listed = None
    for index, filename in enumerate(listed or ()):
        section_path = os.path.join(folder, filename)
        if not os.path.isfile(section_path):
            present = [f for f in os.listdir(folder) if f.endswith(".yaml") and f != "sheet.yaml"]
            reader.error(listed.item_lines[index], f"section file '{filename}' does not exist{_suggest(filename, present)}")
            continue
        section = _load_section(section_path, columns, errors)
        if section is not None:
            sections.append(section)
    for filename in sorted(os.listdir(folder)):
        if filename.endswith(".yaml") and filename != "sheet.yaml" and filename not in (listed or ()):
            reader.error(data.key_lines.get("sections", data.line), f"section file '{filename}' is not listed in 'sections'")
    _check_unique_row_ids(sections, errors)
    if isinstance(data.get("description"), str):
        facts.validate(reader, data["description"], getattr(data["description"], "content_line", data.key_lines["description"]))
    return Sheet(
        id=sheet_id,
        title=reader.string(data, "title"),
        source=Source(path, 1),
        columns=tuple(columns),
        sections=tuple(sections),
        description=reader.string(data, "description", required=False),
        order=order,
    )


def _lanes(reader: _Reader, value, line: int) -> tuple[str, ...]:
    if not isinstance(value, Seq) or not value or not all(isinstance(v, str) for v in value):
        reader.error(line, "'lanes' must be a non-empty list of lane names")
        return ()
    for index, name in enumerate(value):
        if name not in lane_registry.LANES:
            reader.error(value.item_lines[index], f"unknown lane '{name}'{_suggest(name, lane_registry.LANES)}")
    return tuple(str(v) for v in value)


def _columns(reader: _Reader, value, line: int) -> list[Column]:
    if not isinstance(value, Seq) or not value:
        reader.error(line, "'columns' must be a non-empty list")
        return []
    columns = []
    seen: dict[str, int] = {}
    for item in value:
        data = reader.mapping(item, "column", line)
        if data is None:
            continue
        column_id = reader.string(data, "id", slug=True)
        if column_id in seen:
            reader.error(data.key_lines["id"], f"duplicate column id '{column_id}' (first on line {seen[column_id]})")
        seen[column_id] = data.key_lines.get("id", data.line)
        lanes = _lanes(reader, data.get("lanes"), data.key_lines.get("lanes", data.line)) if "lanes" in data else ()
        columns.append(
            Column(column_id, reader.string(data, "name"), lanes, reader.string(data, "note", required=False))
        )
    return columns


def _load_section(path: str, columns: list[Column], errors: list[ContentError]) -> Section | None:
    data = _read(path, errors)
    if data is None:
        return None
    reader = _Reader(path, errors)
    data = reader.mapping(data, "section", 1)
    if data is None:
        return None
    rows = []
    value = data.get("rows")
    if value is not None and not isinstance(value, Seq):
        reader.error(data.key_lines["rows"], "'rows' must be a list")
        value = None
    for item in value or ():
        row = _row(reader, item, columns, data.line)
        if row is not None:
            rows.append(row)
    return Section(reader.string(data, "id", slug=True), reader.string(data, "title"), Source(path, data.line), tuple(rows))


def _row(reader: _Reader, item, columns: list[Column], line: int) -> Row | None:
    data = reader.mapping(item, "row", line)
    if data is None:
        return None
    timeout = data.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        reader.error(data.key_lines.get("timeout", data.line), "'timeout' must be a positive number of seconds")
        timeout = DEFAULT_TIMEOUT
    cells = []
    value = data.get("cells")
    column_ids = [column.id for column in columns]
    if isinstance(value, Map):
        for key in value:
            if key not in column_ids:
                reader.error(value.key_lines[key], f"unknown column '{key}'{_suggest(key, column_ids)}")
        for column in columns:
            if column.id not in value:
                reader.error(value.line, f"row '{data.get('id')}' has no cell for column '{column.id}'")
                continue
            cell = _cell(reader, value[column.id], column, value.key_lines[column.id])
            if cell is not None:
                cells.append(cell)
    elif value is not None:
        reader.error(data.key_lines["cells"], "'cells' must be a mapping of column id to cell")
    notes = reader.string(data, "notes", required=False)
    same = _same(reader, data.get("same"), data.key_lines.get("same", data.line), cells) if "same" in data else None
    if notes:
        line = getattr(data.get("notes"), "content_line", data.key_lines.get("notes", data.line))
        _check_checked_notes(reader, notes, line, cells)
        facts.validate(reader, notes, line)
    return Row(
        id=reader.string(data, "id", slug=True),
        title=reader.string(data, "title"),
        source=Source(reader.path, data.line),
        cells=tuple(cells),
        notes=notes,
        timeout=float(timeout),
        same=same,
    )


def _number(reader: _Reader, data: Map, key: str, default: float) -> float:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        reader.error(data.key_lines.get(key, data.line), f"'{key}' must be a non-negative number")
        return default
    return float(value)


def _same(reader: _Reader, item, line: int, cells: list[Cell]) -> Equivalence | None:
    data = reader.mapping(item, "same", line)
    if data is None:
        return None
    value = reader.string(data, "value")
    if value and not value.isidentifier():
        reader.error(data.key_lines["value"], f"'value' must be a Python name, not '{value}'")
    code_columns = [cell.column for cell in cells if cell.kind == CODE]
    columns: tuple[str, ...] = ()
    if "columns" in data:
        listed = data["columns"]
        if not isinstance(listed, Seq) or not all(isinstance(c, str) for c in listed):
            reader.error(data.key_lines["columns"], "'columns' must be a list of column ids")
        else:
            for index, column in enumerate(listed):
                if column not in code_columns:
                    reader.error(listed.item_lines[index], f"column '{column}' has no code cell in this row{_suggest(column, code_columns)}")
            columns = tuple(str(c) for c in listed)
    compared = columns or tuple(code_columns)
    lane_count = sum(len(cell.lanes) for cell in cells if cell.kind == CODE and cell.column in compared)
    if lane_count < 2:
        reader.error(data.line, "'same' needs at least two code cells (or lanes) to compare")
    dtype = data.get("dtype", False)
    if not isinstance(dtype, bool):
        reader.error(data.key_lines["dtype"], "'dtype' must be true or false")
        dtype = False
    return Equivalence(
        value=value,
        source=Source(reader.path, data.line),
        rtol=_number(reader, data, "rtol", 1e-5),
        atol=_number(reader, data, "atol", 1e-6),
        dtype=dtype,
        columns=columns,
    )


def checked_labels(match: re.Match) -> list[str]:
    """The labels a "(checked: a, b)" match names."""
    return [label.strip() for label in match.group(1).lstrip(":").split(",")]


def _check_checked_notes(reader: _Reader, notes: str, line: int, cells: list[Cell]) -> None:
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


def _cell(reader: _Reader, item, column: Column, line: int) -> Cell | None:
    data = reader.mapping(item, "cell", line)
    if data is None:
        return None
    kinds = [kind for kind in (CODE, TEXT, NONE) if kind in data]
    if len(kinds) != 1:
        what = "none of" if not kinds else "more than one of"
        reader.error(data.line, f"a cell needs exactly one of 'code', 'text' or 'none'; this one has {what} them")
        return None
    kind = kinds[0]
    for key in data:
        if key in SCHEMA["cell"] and key not in CELL_KIND_FIELDS[kind]:
            reader.error(data.key_lines[key], f"'{key}' does not belong in a {kind} cell")
    source = Source(reader.path, data.line)
    if kind == CODE:
        lanes = column.lanes
        if "lanes" in data:
            lanes = _lanes(reader, data["lanes"], data.key_lines["lanes"])
        elif not lanes:
            reader.error(data.line, f"column '{column.id}' has no lanes, so its code cells must name theirs")
        cpu_only = reader.string(data, "cpu_only", required=True) if "cpu_only" in data else ""
        gpu_only = reader.string(data, "gpu_only", required=True) if "gpu_only" in data else ""
        if cpu_only and gpu_only:
            reader.error(data.key_lines["gpu_only"], "a cell cannot be both 'cpu_only' and 'gpu_only'")
        if gpu_only and not any(name in lane_registry.GPU_LANES for name in lanes):
            reader.error(data.key_lines["gpu_only"], f"'gpu_only' needs a lane that can use a GPU ({', '.join(lane_registry.GPU_LANES)})")
        check = reader.snippet(data, "check")
        counterexamples = ()
        if "counterexamples" in data:
            counterexamples = _counterexamples(reader, data["counterexamples"], data.key_lines["counterexamples"])
            if counterexamples and check is None:
                reader.error(data.key_lines["counterexamples"], "counterexamples need a 'check' that rejects them")
        return Cell(
            column=column.id,
            kind=CODE,
            source=source,
            code=reader.snippet(data, "code"),
            setup=reader.snippet(data, "setup"),
            check=check,
            lanes=lanes,
            counterexamples=counterexamples,
            cpu_only=cpu_only,
            gpu_only=gpu_only,
        )
    if kind == TEXT:
        return Cell(column.id, TEXT, source, text=reader.string(data, "text"), url=reader.string(data, "source", required=False))
    reason = data.get("none")
    if not isinstance(reason, str) or not reason.strip():
        reader.error(data.key_lines["none"], "a 'none' cell needs a reason: what the framework lacks, and what to use instead")
        reason = ""
    return Cell(column.id, NONE, source, reason=str(reason))


def _counterexamples(reader: _Reader, value, line: int) -> tuple[Counterexample, ...]:
    if not isinstance(value, Seq) or not value:
        reader.error(line, "'counterexamples' must be a non-empty list of {code, why}")
        return ()
    out = []
    for index, item in enumerate(value):
        data = reader.mapping(item, "counterexample", value.item_lines[index])
        if data is None:
            continue
        code = reader.snippet(data, "code")
        why = reader.string(data, "why")
        raises = reader.string(data, "raises", required=True) if "raises" in data else ""
        if raises:
            try:
                re.compile(raises)
            except re.error as exc:
                reader.error(data.key_lines["raises"], f"'raises' is not a valid regular expression: {exc}")
        if code is not None:
            out.append(Counterexample(code=code, why=why, source=Source(reader.path, data.line), raises=raises))
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
