"""Checks that catch the wrong answer: counterexamples must fail, equivalence rows must agree,
"(checked)" notes must name a check line, facts are computed, not typed."""

from __future__ import annotations

import os
import textwrap

import pytest

from generator import build
from generator.errors import ContentInvalid
from generator.load import content
from generator.model import PASSED
from generator.render import markup
from tests.conftest import write_content

COLUMNS = (("a", "python"), ("b", "python"))


def _row(cell_a: str, cell_b: str = "{text: fact}", extra: str = "", row_id: str = "r") -> str:
    def indent(text: str, by: int) -> str:
        return textwrap.indent(textwrap.dedent(text).strip("\n"), " " * by)

    parts = [f"  - id: {row_id}", f"    title: {row_id}"]
    if extra:
        parts.append(indent(extra, 4))
    parts += ["    cells:", "      a:", indent(cell_a, 8)]
    parts += ["      b:", indent(cell_b, 8)] if "\n" in cell_b.strip() else [f"      b: {cell_b}"]
    return "\n".join(parts) + "\n"


def _content(tmp_path, *rows: str) -> str:
    return write_content(tmp_path / "content", {"s.yaml": "id: s\ntitle: S\nrows:\n" + "".join(rows)}, columns=COLUMNS)


def _build(tmp_path, root: str):
    options = build.Options(content_dir=root, out_dir=str(tmp_path / "site"), cache_dir=str(tmp_path / "cache"), cores=2,
                            show_progress=False, benchmarks=False)  # fmt: skip
    return build.build(options)


SQUARE = """
setup: |
  import numpy as np
  x = np.arange(4.0)
code: |
  out = x ** 2
check: |
  assert np.allclose(out, [0, 1, 4, 9])  # checked: squares
"""


def test_a_counterexample_the_check_rejects_verifies_and_is_shown(tmp_path):
    cell = SQUARE + """
counterexamples:
  - code: |
      out = x * 2
    why: doubles instead of squaring
  - code: |
      out = np.squar(x)
    why: a misspelt function
    raises: "has no attribute 'squar'"
  - code: |
      out = squares(x)
    why: a helper the reader never defined
    raises: "NameError: name 'squares'"
"""
    outcome = _build(tmp_path, _content(tmp_path, _row(cell)))
    assert outcome.written and not outcome.failures
    verdict = outcome.verification.verdicts[("t", "r", "a")]
    assert [(i, r.status) for i, _, r in verdict.counterexamples] == [(1, PASSED), (2, PASSED), (3, PASSED)]
    assert verdict.counterexamples[0][2].detail.startswith("rejected by the check: AssertionError")
    page = (tmp_path / "site" / "t.html").read_text()
    assert "Not this (3): ✓ each rejected" in page and "doubles instead of squaring" not in page  # loaded on opening
    bodies = (tmp_path / "site" / "data" / "t.not-this.js").read_text()
    assert bodies.startswith('hpg.receive("not-this/t",') and "doubles instead of squaring" in bodies and "✓ raises as expected" in bodies


@pytest.mark.parametrize(
    ("wrong", "raises", "message"),
    [
        ("out = x ** 2.0", "", "the counterexample passed the check"),  # the check cannot tell: too weak
        ("out = np.squar(x)", "", "failed in its code, not in the check"),  # breaks, proves nothing
        ("out = np.squar(x)", "ZeroDivisionError", "expected the code to raise /ZeroDivisionError/"),
        # rejected only because the check reads a name the wrong snippet never defines: proves nothing
        ("result = x * 2", "", "on a name it does not define (NameError: name 'out' is not defined)"),
        # a raises pattern that happens to match a NameError's message does not count either
        ("out = np.square(y)", "'y'", "on a name it does not define"),
    ],
)
def test_a_counterexample_that_is_not_rejected_fails_the_build(tmp_path, wrong, raises, message):
    raises_line = f"\n    raises: {raises}" if raises else ""
    cell = SQUARE + f"counterexamples:\n  - code: |\n      {wrong}\n    why: wrong{raises_line}\n"
    outcome = _build(tmp_path, _content(tmp_path, _row(cell)))
    assert not outcome.written
    [(key, verdict)] = outcome.failures
    assert key == ("t", "r", "a") and verdict.status == "failed"
    assert message in verdict.counterexamples[0][2].detail


def _equivalence_row(b_code: str, extra: str = "same: {value: out}") -> str:
    b = "setup: |\n  import numpy as np\n  x = np.arange(4.0)\ncode: |\n  " + b_code + "\n"
    return _row(SQUARE, b, extra=extra)


def test_an_equivalence_row_whose_columns_agree_says_so(tmp_path):
    outcome = _build(tmp_path, _content(tmp_path, _equivalence_row("out = np.square(x).astype('float32')")))
    assert not outcome.failures
    same = outcome.verification.same[("t", "r")]
    assert same.proven and same.columns == ("a", "b")
    assert "same result in all 2 columns" in (tmp_path / "site" / "t.html").read_text()


def test_an_equivalence_row_whose_columns_differ_fails_naming_them(tmp_path):
    outcome = _build(tmp_path, _content(tmp_path, _equivalence_row("out = np.square(x) + 1e-3")))
    assert not outcome.written
    problems = {key: verdict.problem for key, verdict in outcome.failures}
    assert set(problems) == {("t", "r", "a"), ("t", "r", "b")}  # two columns, no majority: both blamed
    assert "b@python differs from a@python: max abs difference 0.001" in problems[("t", "r", "b")]


def test_equivalence_compares_shapes_and_blames_the_odd_one_out(tmp_path):
    root = write_content(
        tmp_path / "content",
        {"s.yaml": "id: s\ntitle: S\nrows:\n" + _row(SQUARE, "{text: x}", extra="same: {value: out}").replace(
            "      b: {text: x}\n",
            "      b:\n        lanes: [python, torch]\n        setup: |\n          import numpy as np\n          x = np.arange(4.0)\n"
            "        code: |\n          out = (x ** 2).reshape(2, 2)\n",
        )},
        columns=COLUMNS,
    )  # fmt: skip
    outcome = _build(tmp_path, root)
    problems = {key: verdict.problem for key, verdict in outcome.failures}
    assert set(problems) == {("t", "r", "a")}  # b's two lanes agree with each other: a is the odd one out
    assert "a@python differs from b@python: shape (2, 2) vs (4,)" in problems[("t", "r", "a")]


def test_an_equivalence_cell_that_leaves_no_value_fails(tmp_path):
    outcome = _build(tmp_path, _content(tmp_path, _equivalence_row("result = np.square(x)")))
    [(key, verdict)] = [(k, v) for k, v in outcome.failures if k[2] == "b"]
    assert "this cell left no 'out'" in verdict.results[0][1].error


def _errors(root: str) -> list[str]:
    with pytest.raises(ContentInvalid) as info:
        content.load(root)
    return [f"{os.path.basename(e.path)}:{e.line}: {e.message}" for e in info.value.errors]


def test_a_checked_note_must_name_a_labelled_check_line(tmp_path):
    notes = "notes: |\n  First line.\n  Squares (checked). Not cubes (checked: cubes).\n"
    errors = _errors(_content(tmp_path, _row(SQUARE, extra=notes)))
    assert errors[0].startswith("s.yaml:8: '(checked)' must name the check line")
    assert errors[1].startswith("s.yaml:8: '(checked: cubes)' names no check line") and "labels: squares" in errors[1]


def test_a_checked_note_shows_its_check_line(tmp_path):
    root = _content(tmp_path, _row(SQUARE, extra="notes: 'Squares each element (checked: squares).'"))
    sheets = content.load(root)
    html = markup.notes_markdown(next(sheets[0].rows()), {})
    assert '(<abbr title="assert np.allclose(out, [0, 1, 4, 9])">checked</abbr>)' in html


def test_facts_are_computed_and_unknown_ones_rejected(tmp_path):
    bad = _content(tmp_path, _row(SQUARE, extra="notes: There are {{row-count}} rows."))
    assert _errors(bad) == ["s.yaml:6: unknown fact '{{row-count}}'; known: cell-runs, code-cells, counterexamples, keras-cells-all-backends, "
                            "keras-cells-fewer-backends, keras-code-cells, rows, sheets, version:PACKAGE"]  # fmt: skip
    good = write_content(tmp_path / "good", {"s.yaml": "id: s\ntitle: S\nrows:\n" + _row(SQUARE, extra="notes: '{{rows}} row, {{code-cells}} code cell, numpy {{version:numpy}}.'")}, columns=COLUMNS)
    outcome = _build(tmp_path, good)
    import numpy

    assert f"1 row, 1 code cell, numpy {numpy.__version__}." in (tmp_path / "site" / "t.html").read_text()
    assert outcome.written
