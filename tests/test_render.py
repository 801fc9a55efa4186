"""Rendering: golden output for a small sheet, and hostile content that must not reach a page as markup."""

from __future__ import annotations

import os
import re

import pytest

from generator.load import content
from generator.model import Result
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
