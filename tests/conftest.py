"""Shared fixtures: small content trees written on the fly, and a runner for a handful of cells."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from generator.load import content  # noqa: E402
from generator.verify.cache import Cache  # noqa: E402
from generator.verify.verification import verify  # noqa: E402

SHEET = """\
id: {sheet_id}
title: Test sheet
columns:
{columns}
sections: [{sections}]
"""


def write_content(root, sections: dict[str, str], columns=(("pytorch", "python"), ("jax", "python")), sheet_id="t"):
    """Write a sheet folder under root/sheet_id with the given section files; return the content dir."""
    folder = os.path.join(str(root), sheet_id)
    os.makedirs(folder, exist_ok=True)
    cols = "\n".join(f"  - {{id: {cid}, name: {cid.title()}, lanes: [{lane}]}}" for cid, lane in columns)
    with open(os.path.join(folder, "sheet.yaml"), "w", encoding="utf-8") as handle:
        handle.write(SHEET.format(sheet_id=sheet_id, columns=cols, sections=", ".join(sections)))
    for name, text in sections.items():
        with open(os.path.join(folder, name), "w", encoding="utf-8") as handle:
            handle.write(textwrap.dedent(text))
    return str(root)


def code_row(row_id: str, code: str, check: str = "", lane: str = "python", timeout: float | None = None) -> str:
    """A row whose first column runs `code` (then `check`) in `lane`; the second column is text."""
    def block(text: str) -> str:
        return textwrap.indent(textwrap.dedent(text).strip("\n") + "\n", " " * 10)

    parts = [f"  - id: {row_id}", f"    title: {row_id}"]
    if timeout is not None:
        parts.append(f"    timeout: {timeout}")
    parts += ["    cells:", "      pytorch:", f"        lanes: [{lane}]", "        code: |", block(code).rstrip("\n")]
    if check:
        parts += ["        check: |", block(check).rstrip("\n")]
    parts += ["      jax: {text: fact}"]
    return "\n".join(parts) + "\n"


def section(*rows: str, section_id: str = "s") -> str:
    return f"id: {section_id}\ntitle: Section\nrows:\n" + "".join(rows)


def summary_counts(stderr: str) -> tuple[int, int, int]:
    """(passed, failed, cached) of the summary table's total row: the counts, not the table's padding."""
    totals = [line.split() for line in stderr.splitlines() if line.split()[:1] == ["total"]]
    assert len(totals) == 1, f"no single 'total' row in:\n{stderr}"
    passed, failed, cached = (int(n) for n in totals[0][1:4])
    return passed, failed, cached


@pytest.fixture
def run_rows(tmp_path):
    """Run rows (from code_row) and return {row id: (status, result)} for their code cells."""

    def run(*rows: str, cores: int = 2, memory_cap: int | None = None, force: bool = True):
        root = write_content(tmp_path / "content", {"s.yaml": section(*rows)})
        sheets = content.load(root)
        verification = verify(
            sheets, cache=Cache(str(tmp_path / "cache")), cores=cores, force=force, show_progress=False, memory_cap=memory_cap
        )
        return {row: verdict.results[0][1] for (_, row, _), verdict in verification.verdicts.items()}

    return run


# --- the real site, built once per session --------------------------------------------------------------------
REAL_CACHE = os.path.join(ROOT, ".cache")


@dataclasses.dataclass(frozen=True)
class RealSite:
    out: Path  # the site folder
    returncode: int  # of the build: 0 every cell passed, 1 some failed (shown as failed: --keep-going)
    stderr: str


@pytest.fixture(scope="session")
def real_site(tmp_path_factory) -> RealSite:
    """The real content built once for the whole session into a temporary folder, with the repository's .cache.

    This is the test suite's one full verification of the content: a warm cache (after `make build`, or CI's
    restored .cache/results) makes it a render; a cold one runs every cell, once. It keeps going past failing
    cells so that the page tests still run; test_site.py fails on them. The build never runs the benchmarks
    (content/benchmarks/ is rendered). REAL_SITE=<dir> tests an already built site instead (quicker while
    editing templates; BROWSER_TEST_SITE is the old name).
    """
    given = os.environ.get("REAL_SITE") or os.environ.get("BROWSER_TEST_SITE")
    if given:
        return RealSite(Path(given).resolve(), 0, "")
    out = tmp_path_factory.mktemp("real") / "site"
    command = [sys.executable, "-m", "generator", "build", "--keep-going", "--quiet", "--out", str(out), "--cache", REAL_CACHE]
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=3600)
    assert proc.returncode in (0, 1) and (out / "index.html").is_file(), f"the site did not build (exit {proc.returncode}):\n{proc.stderr[-5000:]}"
    return RealSite(out, proc.returncode, proc.stderr)


# --- groups: `pytest -m "not content and not browser"` is the fast suite -----------------------------------
def _uses(item, fixture: str) -> bool:
    return fixture in getattr(item, "fixturenames", ())


def pytest_collection_modifyitems(config, items):
    """content: needs the real site (its one build verifies the content) or runs the real workloads;
    browser: drives Chromium or runs the HTML checker (everything under tests/browser/).

    Without Chromium (and not under CI, where tests/browser/conftest.py fails them instead), the tests
    that drive it are left out and one line at the end says so and how to run them.
    """
    browser_dir = os.path.join(ROOT, "tests", "browser") + os.sep
    for item in items:
        if _uses(item, "real_site"):
            item.add_marker(pytest.mark.content)
        if str(item.path).startswith(browser_dir):
            item.add_marker(pytest.mark.browser)
    chromium = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    if os.path.isfile(chromium) and os.access(chromium, os.X_OK) or os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        return
    left_out = [item for item in items if _uses(item, "browser")]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if item not in left_out]
        config._browser_left_out = (len(left_out), chromium)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    left_out = getattr(config, "_browser_left_out", None)
    if left_out:
        count, chromium = left_out
        terminalreporter.write_line(
            f"NOT RUN: {count} browser test(s): no Chromium at {chromium}. To run them: `sudo apt-get install -y chromium` "
            "(`make test` does it when run as root), or set CHROMIUM=/path/to/chromium; CI=true makes this a failure.",
            yellow=True,
            bold=True,
        )
