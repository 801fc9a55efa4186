"""The real content: every code cell verifies, the site builds, and a rebuild runs nothing.

The site is the session's one build of the real content (`real_site` in tests/conftest.py), shared with
the browser tests. A cold run verifies every cell of every sheet; it shares the repository's .cache with
`make build`, so a build after `make test` (or a test run after `make build`) is a render.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from generator.load import content
from generator.model import CODE
from tests.conftest import ROOT

CONTENT = os.path.join(ROOT, "content")
CACHE = os.path.join(ROOT, ".cache")


@pytest.fixture(scope="session")
def built_site(real_site):
    return real_site.out


def test_every_code_cell_passed(real_site, built_site):
    assert real_site.returncode == 0, real_site.stderr[-20000:]
    with open(built_site / "verification.json", encoding="utf-8") as handle:
        cells = json.load(handle)["cells"]
    assert cells, "no code cell was verified"
    failed = [f"{c['sheet']}/{c['row']}/{c['column']}@{c['lane']}: {c['status']}" for c in cells if c["status"] != "passed"]
    assert failed == []


def test_every_sheet_has_a_page(built_site):
    for sheet in content.load(CONTENT):
        assert (built_site / "data" / f"{sheet.id}.json").is_file()
        for _, path, sections in sheet.parts():  # a sheet split into pages: each page, with its rows and lazy files
            html = (built_site / path).read_text(encoding="utf-8")
            assert all(f'<tr id="{row.id}" class="row">' in html for section in sections for row in section.rows), path
            for kind in ("runs", "not-this", "runnable"):
                assert (built_site / "data" / f"{path.removesuffix('.html')}.{kind}.js").is_file()
    assert (built_site / "index.html").is_file()


def test_every_code_cell_has_a_check():
    missing = []
    for sheet in content.load(CONTENT):
        for row in sheet.rows():
            for cell in row.cells:
                if cell.kind == CODE and cell.check is None:
                    missing.append(f"{cell.source}: {sheet.id}/{row.id} [{cell.column}] has no check")
    assert missing == []


def test_rebuild_runs_no_cell(built_site, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "generator", "build", "--out", str(tmp_path / "site"), "--cache", CACHE, "--quiet"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert "ran 0 cell(s) in 0 lane worker(s)" in proc.stderr
    assert (tmp_path / "site" / "index.html").read_bytes() == (built_site / "index.html").read_bytes()


def test_every_lane_worker_forked_its_cells(real_site):
    """A worker whose imports, preloads or prelude leave a thread running cannot fork safely: it starts each
    cell in a fresh interpreter (correct, several times slower) and the build says so in a note. Where the
    real build ran cells (a cold cache, as in CI), no lane may say it."""
    assert "starts in a fresh interpreter" not in real_site.stderr, real_site.stderr[-5000:]
