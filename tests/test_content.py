"""Loading: every error case names file:line, quotes the line, and all errors come at once."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from generator.errors import ContentInvalid
from generator.load import content
from tests.conftest import ROOT, write_content

SAMPLES = os.path.join(ROOT, "tests", "samples", "errors")

# sample file -> the exact messages loading it must give (path relative to the sheet folder)
EXPECTED = {
    "invalid_yaml.yaml": [
        "invalid_yaml.yaml:6: invalid YAML: indentation: line 6 is indented 5 spaces, line 5 above it 4: a key of the same mapping takes the "
        "same indentation (the YAML parser says: mapping values are not allowed in this context)\n    6 |      cells: {}",
    ],
    "duplicate_key.yaml": [
        "duplicate_key.yaml:6: duplicate key 'title' (first defined on line 5): the second is ignored, so errors about what it holds may follow"
        "\n    6 |     title: Two",
    ],
    # the root cause first: the second 'cells' is dropped, which is why the row has no jax cell (line 7)
    "duplicate_key_causes_more.yaml": [
        "duplicate_key_causes_more.yaml:8: duplicate key 'cells' (first defined on line 6): the second is ignored, so errors about what it "
        "holds may follow\n    8 |     cells:",
        "duplicate_key_causes_more.yaml:7: row 'r1' has no cell for column 'jax'\n    7 |       pytorch: {text: \"1\"}",
    ],
    # the line whose indentation is wrong (it ends the block), not the next one where the parser stumbles
    "underindented_block.yaml": [
        "underindented_block.yaml:10: invalid YAML: indentation: line 10 is indented 8 spaces, less than the 10 of the block that starts on "
        "line 8 (code: |), so it ends the block: indent it to 10 spaces to keep it in the block, or to 8 if it starts the next key (the YAML "
        "parser says: while scanning a simple key could not find expected ':')\n    10 |         y = 2",
    ],
    "tab_indented.yaml": [
        "tab_indented.yaml:10: invalid YAML: indentation: line 10 is indented with a tab; YAML indents with spaces (the YAML parser says: "
        "while scanning a block scalar found a tab character where an indentation space is expected)\n    10 | \tcheck: |",
    ],
    "unknown_field.yaml": [
        "unknown_field.yaml:10: unknown field 'chek' in cell (did you mean 'check'?)\n    10 |         chek: |",
    ],
    "unknown_column.yaml": [
        "unknown_column.yaml:9: unknown column 'jaxx' (did you mean 'jax'?)\n    9 |       jaxx: {text: \"3\"}",
    ],
    "duplicate_row_id.yaml": [
        "duplicate_row_id.yaml:9: duplicate row id 'r1' (first used at {dir}/duplicate_row_id.yaml:4)\n    9 |   - id: r1",
    ],
    "missing_column.yaml": [
        "missing_column.yaml:7: row 'r1' has no cell for column 'jax'\n    7 |       pytorch: {text: \"1\"}",
    ],
    "code_syntax_error.yaml": [
        "code_syntax_error.yaml:10: 'code' is not valid Python: '(' was never closed\n    10 |           y = (x +",
    ],
    "none_without_reason.yaml": [
        "none_without_reason.yaml:7: a 'none' cell needs a reason: what the framework lacks, and what to use instead\n"
        "    7 |       pytorch: {none: \"\"}",
    ],
    "unknown_lane.yaml": [
        "unknown_lane.yaml:10: unknown lane 'pytroch' (did you mean 'torch'?)\n    10 |         lanes: [pytroch]",
    ],
    "two_kinds.yaml": [
        "two_kinds.yaml:8: a cell needs exactly one of 'code', 'text' or 'none'; this one has more than one of them\n"
        "    8 |         text: \"a fact\"",
    ],
    "null_required_field.yaml": [
        "null_required_field.yaml:6: 'cells' is required but has no value (nothing after 'cells:')\n    6 |     cells:",
    ],
    "yaml_bomb.yaml": [
        "yaml_bomb.yaml:6: YAML anchors and aliases are not allowed in content; the file was refused\n"
        "    6 |     notes: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]",
    ],
}


def _sheet_with(tmp_path, *names: str) -> str:
    root = write_content(tmp_path, {name: open(os.path.join(SAMPLES, name)).read() for name in names})
    return root


def _messages(root: str) -> list[str]:
    with pytest.raises(ContentInvalid) as raised:
        content.load(root)
    return [error.format() for error in raised.value.errors]


def test_every_sample_is_covered():
    assert sorted(EXPECTED) == sorted(f for f in os.listdir(SAMPLES) if f.endswith(".yaml"))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_error_names_file_and_line(tmp_path, name):
    root = _sheet_with(tmp_path, name)
    folder = os.path.join(root, "t")
    expected = [f"{folder}/{message.replace('{dir}', folder)}" for message in EXPECTED[name]]
    assert _messages(root) == expected


def test_all_errors_are_reported_at_once(tmp_path):
    names = ["duplicate_key.yaml", "unknown_field.yaml", "missing_column.yaml", "code_syntax_error.yaml"]
    for index, name in enumerate(names):  # one sheet each, so that their row ids do not collide
        write_content(tmp_path, {name: open(os.path.join(SAMPLES, name)).read()}, sheet_id=f"s{index}")
    messages = _messages(str(tmp_path))
    assert len(messages) == 4
    assert sorted(m.split(":")[0].rsplit("/", 1)[1] for m in messages) == sorted(names)


def test_yaml_bomb_is_refused_quickly(tmp_path):
    root = _sheet_with(tmp_path, "yaml_bomb.yaml")
    started = time.process_time()  # CPU time: the work done, however loaded the machine is
    with pytest.raises(ContentInvalid):
        content.load(root)
    assert time.process_time() - started < 1.0


def test_unlisted_section_file_is_an_error(tmp_path):
    root = write_content(tmp_path, {"a.yaml": "id: a\ntitle: A\nrows: []\n"})
    with open(os.path.join(root, "t", "stray.yaml"), "w") as handle:
        handle.write("id: b\ntitle: B\nrows: []\n")
    assert any("section file 'stray.yaml' is not listed in 'sections'" in m for m in _messages(root))


@pytest.mark.parametrize("how", ["dotdot", "absolute", "symlink", "symlinked-sheet", "symlinked-guide"])
def test_a_path_outside_the_content_folder_is_an_error_that_quotes_nothing_of_it(tmp_path, how):
    # A pull request may name any file of the machine that builds it; the error must print none of it.
    secret = tmp_path / "outside" / "secret.yaml"
    secret.parent.mkdir()
    secret.write_text("token: hunter2-SECRET\nid: [unclosed\n")
    root = write_content(tmp_path / "content", {"a.yaml": "id: a\ntitle: A\nrows: []\n"})
    sheet_yaml = os.path.join(root, "t", "sheet.yaml")
    named = {"dotdot": "../../outside/secret.yaml", "absolute": str(secret), "symlink": "link.yaml"}.get(how)
    if named:
        text = open(sheet_yaml).read().replace("sections: [a.yaml]", f"sections: [a.yaml, {named!r}]")
        open(sheet_yaml, "w").write(text)
    if how == "symlink":
        os.symlink(secret, os.path.join(root, "t", "link.yaml"))
    elif how == "symlinked-sheet":
        os.makedirs(tmp_path / "elsewhere")
        os.symlink(secret, tmp_path / "elsewhere" / "sheet.yaml")
        os.symlink(tmp_path / "elsewhere", os.path.join(root, "leak"))
    elif how == "symlinked-guide":
        os.symlink(secret, os.path.join(root, "guide.yaml"))
    proc = subprocess.run([sys.executable, "-m", "generator", "check", "--content", root], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    assert "hunter2" not in proc.stderr + proc.stdout and "unclosed" not in proc.stderr + proc.stdout
    assert "outside the content folder" in proc.stderr or "a section is a file name" in proc.stderr, proc.stderr


def test_check_command_exits_2_and_prints_every_error(tmp_path):
    root = _sheet_with(tmp_path, "duplicate_key.yaml", "unknown_lane.yaml")
    proc = subprocess.run(
        [sys.executable, "-m", "generator", "check", "--content", root], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert "duplicate_key.yaml:6: duplicate key 'title'" in proc.stderr
    assert "unknown_lane.yaml:10: unknown lane 'pytroch'" in proc.stderr
    assert "duplicate row id 'r1'" in proc.stderr  # the two files share a row id: also an error
    assert "3 error(s) in the content; nothing was built." in proc.stderr


def test_valid_content_loads_with_lines(tmp_path):
    root = write_content(
        tmp_path,
        {"a.yaml": "id: a\ntitle: A\nrows:\n  - id: r\n    title: R\n    cells:\n      pytorch:\n        code: |\n          x = 1\n      jax: {none: lacks it}\n"},
    )
    (sheet,) = content.load(root)
    cell = sheet.sections[0].rows[0].cells[0]
    assert cell.code.text == "x = 1\n" and cell.code.line == 9
    assert sheet.sections[0].rows[0].cells[1].reason == "lacks it"




def test_a_missing_required_field_is_one_error(tmp_path):
    """The spec reports a missing required field once, not also as a value of the wrong type."""
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "sheet.yaml").write_text("id: t\ntitle: T\nsections: []\n")
    assert [m.split("\n")[0] for m in _messages(str(tmp_path))] == [f"{folder}/sheet.yaml:1: sheet is missing the required field 'columns'"]


def test_every_schema_field_has_a_type_and_a_doc_line():
    from generator.load.schema import SPECS

    for kind, spec in SPECS.items():
        for name, field in spec.fields.items():
            assert field.description.strip() and field.type_doc.strip(), (kind, name)


def _split_sheet(tmp_path, pages: str):
    sections = {name: f"id: {name[:-5]}\ntitle: {name[:-5].title()}\nrows:\n  - id: r-{name[:-5]}\n    title: R\n    cells:\n      pytorch: {{none: lacks it}}\n      jax: {{none: lacks it}}\n"
                for name in ("a.yaml", "b.yaml", "c.yaml")}  # fmt: skip
    root = write_content(tmp_path, sections)
    with open(os.path.join(root, "t", "sheet.yaml"), "a") as handle:
        handle.write(pages)
    return root


def test_a_sheet_split_into_pages_gives_each_page_its_consecutive_sections(tmp_path):
    root = _split_sheet(tmp_path, "pages:\n  - {id: one, title: One, sections: [a.yaml]}\n  - {id: two, title: Two, sections: [b.yaml, c.yaml]}\n")
    (sheet,) = content.load(root)
    assert [(page.id, path, [s.id for s in sections]) for page, path, sections in sheet.parts()] == [
        ("one", "t.html", ["a"]), ("two", "t-two.html", ["b", "c"])]  # fmt: skip
    assert sheet.page_of()["r-c"] == "t-two.html" and sheet.page_of()["section-a"] == "t.html"


@pytest.mark.parametrize(
    "pages, message",
    [
        ("pages:\n  - {id: one, title: One, sections: [a.yaml, b.yaml]}\n", "these sections are on no page: c.yaml"),
        ("pages:\n  - {id: one, title: One, sections: [a.yaml, c.yaml]}\n  - {id: two, title: Two, sections: [b.yaml]}\n", "lists 'c.yaml' out of order"),
        ("pages:\n  - {id: one, title: One, sections: [a.yaml, b.yaml]}\n  - {id: two, title: Two, sections: [b.yaml, c.yaml]}\n", "section 'b.yaml' is on page 'one' already"),
        ("pages:\n  - {id: one, title: One, sections: [a.yaml, b.yaml, d.yaml, c.yaml]}\n", "names 'd.yaml', which is not in 'sections'"),
        ("pages:\n  - {id: one, title: One, sections: [a.yaml]}\n  - {id: one, title: Two, sections: [b.yaml, c.yaml]}\n", "duplicate page id 'one'"),
    ],
)
def test_a_page_list_that_does_not_cover_the_sections_once_and_in_order_is_an_error(tmp_path, pages, message):
    assert any(message in m for m in _messages(_split_sheet(tmp_path, pages)))


# ---------------------------------------------------------------------------------------------
# declared differences and "see also" (issue 34)


def _rows(*rows: str) -> str:
    return "id: s\ntitle: S\nrows:\n" + "".join(rows)


_CODE_ROW = """\
  - id: {row_id}
    title: R
{extra}    cells:
      pytorch:
        code: |
          x = 1
        check: |
          assert x == 1  # checked: one
      jax: {{text: "a fact"}}
"""


def test_a_declared_difference_names_columns_and_a_check_line_of_its_row(tmp_path):
    extra = '    differs:\n      - what: "int64 in PyTorch"\n        columns: [pytorch]\n        checked: one\n      - what: "each its own"\n'
    (sheet,) = content.load(write_content(tmp_path, {"s.yaml": _rows(_CODE_ROW.format(row_id="r", extra=extra))}))
    first, every = next(sheet.rows()).differs
    assert (first.what, first.columns, first.checked) == ("int64 in PyTorch", ("pytorch",), "one")
    assert first.between("pytorch", "jax") and not first.between("jax", "jax")
    assert every.columns == () and every.between("pytorch", "jax")


def test_a_declared_difference_with_an_unknown_column_or_label_is_an_error_at_its_line(tmp_path):
    extra = '    differs:\n      - what: "x"\n        columns: [pytroch]\n      - what: "y"\n        checked: two\n'
    messages = [m.replace(f"{tmp_path}/t/", "").split("\n")[0] for m in _messages(write_content(tmp_path, {"s.yaml": _rows(_CODE_ROW.format(row_id="r", extra=extra))}))]
    assert messages == [
        "s.yaml:8: unknown column 'pytroch' (did you mean 'pytorch'?)",
        "s.yaml:10: 'checked: two' names no check line: no check in this row has a line ending in '# checked: two'; this row's labels: one",
    ]


def test_see_also_names_rows_that_exist(tmp_path):
    extra = "    see_also: [r2, t/r3]\n"
    root = write_content(tmp_path, {"s.yaml": _rows(_CODE_ROW.format(row_id="r1", extra=extra), _CODE_ROW.format(row_id="r2", extra=""), _CODE_ROW.format(row_id="r3", extra=""))})
    (sheet,) = content.load(root)
    rows = {row.id: row for row in sheet.rows()}
    assert [(ref.sheet, ref.row) for ref in rows["r1"].see_also] == [("t", "r2"), ("t", "r3")]  # a bare row id is on this sheet


def test_see_also_of_a_missing_row_is_an_error_at_its_line(tmp_path):
    extra = "    see_also: [t/r9, other/r1, r1]\n"
    messages = [m.replace(f"{tmp_path}/t/", "").split("\n")[0] for m in _messages(write_content(tmp_path, {"s.yaml": _rows(_CODE_ROW.format(row_id="r1", extra=extra))}))]
    assert sorted(messages) == [
        "s.yaml:6: see_also 'other/r1' names no row (did you mean 't/r1'?)",
        "s.yaml:6: see_also 't/r9' names no row (did you mean 't/r1'?)",
        "s.yaml:6: see_also names the row itself",
    ]
