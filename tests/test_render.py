"""Rendering: golden output for a small sheet, and hostile content that must not reach a page as markup."""

from __future__ import annotations

import json
import os
import re

import pytest

from generator.load import content
from generator.model import Column, Result, Sheet, Source
from generator.render import html as render
from generator.render import markup
from generator.verify.verification import Verification, judge, plan
from tests import golden
from tests.conftest import ROOT


@pytest.mark.parametrize("name", golden.COMPARED)
def test_golden(name):
    files = golden.render_sample()
    with open(os.path.join(golden.GOLDEN, name), "rb") as handle:
        expected = handle.read()
    assert files[name] == expected, f"{name} differs from tests/golden/{name}: run `make golden` if the change is intended"


def _render_hostile():
    sheets = content.load(os.path.join(ROOT, "tests", "samples", "hostile"))
    jobs = plan(sheets)
    results = {
        job.id: Result(
            status="failed",
            stdout="<script>alert('stdout')</script>",
            stderr="<img src=x onerror=alert(1)>",
            error="<script>alert('error')</script>",
            warnings=({"category": "DeprecationWarning", "message": "<script>alert('warning')</script>", "where": "<b>"},),
            device="<script>",
        )
        for job in jobs
    }
    return render.render_site(sheets, Verification(None, judge(jobs, results)))


def test_hostile_content_is_escaped_or_sanitised():
    files = _render_hostile()
    for name in ("hostile.html", "index.html", "verification.html"):
        html = files[name].decode()
        scripts = re.findall(r"<script\b[^>]*>", html, flags=re.I)
        assert len(scripts) == 1 and scripts[0].startswith('<script src="static/site.js?v=' + render.asset_version(files["static/site.js"]) + '"'), name
        assert not re.search(r"<[^>]+\son[a-z]+\s*=", html, flags=re.I), name
        assert "javascript:" not in html.lower().replace("javascript:alert(1)&", ""), name
        assert "<iframe" not in html and "<svg" not in html and "<img" not in html, name


def test_unicode_and_long_lines_render():
    html = _render_hostile()["hostile.html"].decode()
    assert "张量 テンソル מערך 🔥" in html
    assert "שלום עולם" in html
    assert "y" * 40 in html  # the 5000-character line is highlighted whole
    assert "{{ 'x' * 10 }}" in html  # template syntax in content is text, not template


def test_markdown_keeps_safe_links_and_drops_scripts():
    html = str(markup.markdown("[ok](https://example.org) [bad](javascript:alert(1)) <script>x</script> **b**"))
    assert '<a href="https://example.org" rel="noopener noreferrer">ok</a>' in html
    assert "javascript" not in html and "<script" not in html
    assert "<strong>b</strong>" in html


def test_text_cell_source_must_be_http():
    assert markup.safe_url("javascript:alert(1)") == ""
    assert markup.safe_url("https://pytorch.org") == "https://pytorch.org"


def test_card_labels_name_each_column_once_and_per_sheet_where_a_sheet_names_it_otherwise():
    """On a phone each cell is labelled with its column's name by a stylesheet rule (the page has no
    inline style under the site's CSP, and no longer repeats the name on every cell)."""

    def sheet(sheet_id, jax_name):
        columns = (Column("pytorch", "PyTorch", ("torch",)), Column("jax", jax_name, ("jax",)))
        return Sheet(sheet_id, sheet_id, Source("x.yaml", 1), columns, ())

    css = render.column_labels_css([sheet("a", "JAX"), sheet("b", "JAX"), sheet("c", 'JAX "<b>" \\ Optax')])
    assert 'table.sheet td[data-col="jax"]::before { content: "JAX"; }' in css
    assert 'table.sheet td[data-col="pytorch"]::before { content: "PyTorch"; }' in css
    assert 'table.sheet[data-sheet="c"] td[data-col="jax"]::before { content: "JAX \\22 \\3c b\\3e \\22  \\5c  Optax"; }' in css
    assert '[data-sheet="a"]' not in css and '[data-sheet="b"]' not in css and css.count("::before") == 3
    site = _render_hostile()
    page, style = site["hostile.html"].decode(), site["static/style.css"].decode()
    assert "data-name=" not in page and 'data-sheet="hostile"' in page
    # the labels are in the site's stylesheet, a hostile column name escaped there too
    assert 'td[data-col="pytorch"]::before { content: "Py\\3c script\\3e alert(1)\\3c /script\\3e "; }' in style
    assert "<script" not in style


def test_a_sheet_split_into_pages_renders_each_with_its_rows_the_page_list_and_its_own_lazy_files(tmp_path):
    from generator.build import Options, build
    from tests.conftest import section, write_content

    def row(row_id):
        note = {"first": "    notes: see [the other](#second) and [its note](#note-second)\n", "second": "    notes: the second's note\n"}[row_id]
        return f"  - id: {row_id}\n    title: {row_id}\n{note}    cells:\n      pytorch: {{none: lacks it}}\n      jax:\n        lanes: [python]\n        code: |\n          x = 1\n        check: |\n          assert x == 1\n"

    root = write_content(tmp_path / "content", {"a.yaml": section(row("first"), section_id="a"), "b.yaml": section(row("second"), section_id="b")})
    with open(os.path.join(root, "t", "sheet.yaml"), "a") as handle:
        handle.write("pages:\n  - {id: one, title: The first, sections: [a.yaml]}\n  - {id: two, title: The second, sections: [b.yaml]}\n")
    assert build(Options(content_dir=root, out_dir=str(tmp_path / "site"), cache_dir=str(tmp_path / "cache"), show_progress=False, benchmarks=False)).written
    first, second = (tmp_path / "site" / "t.html").read_text(), (tmp_path / "site" / "t-two.html").read_text()
    assert 'id="first"' in first and 'id="second"' not in first and 'id="second"' in second and 'id="first"' not in second
    for page in (first, second):  # both list both pages, and say which rows and sections each holds (forwarding)
        assert '<a href="t.html" data-rows="section-a first"' in page and '<a href="t-two.html" data-rows="section-b second"' in page
    assert 'data-files="t-two"' in second and "data-files" not in first
    assert "second" in (tmp_path / "site" / "data" / "t-two.runs.js").read_text() and "second" not in (tmp_path / "site" / "data" / "t.runs.js").read_text()
    text = (tmp_path / "site" / "search-index.js").read_text()
    rows = {entry[1]: entry for entry in json.loads(text[text.index(",") + 1 : text.rindex(")")])["rows"]}
    assert "p" not in rows["first"][5] and rows["second"][5]["p"] == "t-two"  # search links to the row's own page
    assert 'href="t-two.html#second"' in first  # the first row's note links "#second", now on the other page
    assert 'href="t-two.html#note-second"' in first and 'href="#note-second"' not in first  # and the other row's note
    index = (tmp_path / "site" / "index.html").read_text()  # links to an anchor on another page go there
    assert 'href="t-two.html#section-b"' in index and 'href="t.html#section-b"' not in index
