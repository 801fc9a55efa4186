"""The contributor's path: new-row placeholders fail with file:line, --changed-since picks the edited rows."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from generator.contrib import changes, coverage, newrow
from generator.errors import ContentInvalid
from generator.lanes import LANES
from generator.load import content
from tests.conftest import ROOT, code_row, section, summary_counts, write_content

SAMPLE = os.path.join(ROOT, "tests", "samples", "golden")


def _cli(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "generator", *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_new_row_placeholders_fail_verification_with_file_and_line(tmp_path):
    root = str(tmp_path / "content")
    shutil.copytree(SAMPLE, root)
    # the same columns in the python lane: a placeholder fails before any framework is used, so the sample's
    # torch, jax and Keras lanes would only add their imports (most of a minute of CPU) to this test
    sheet_yaml = os.path.join(root, "golden", "sheet.yaml")
    with open(sheet_yaml, encoding="utf-8") as handle:
        text = handle.read()
    with open(sheet_yaml, "w", encoding="utf-8") as handle:
        handle.write(re.sub(r"lanes: \[[^\]]*\]", "lanes: [python]", text))
    proc = _cli("new-row", "--content", root, "golden", "basics", "Group norm")
    assert proc.returncode == 0, proc.stderr
    assert "added row 'group-norm'" in proc.stderr
    (sheet,) = content.load(root)
    row = next(r for r in sheet.rows() if r.id == "group-norm")
    assert row.title == "Group norm" and len(row.cells) == 3
    proc = _cli("verify", "--content", root, "--cache", str(tmp_path / "cache"), "--only", "group-norm", "--quiet")
    assert proc.returncode == 1
    path = os.path.join(root, "golden", "basics.yaml")
    assert f'File "{path}", line' in proc.stderr
    assert "NotImplementedError: placeholder: replace with the PyTorch snippet" in proc.stderr


def test_new_row_refuses_taken_ids_and_unknown_sections(tmp_path):
    root = str(tmp_path / "content")
    shutil.copytree(SAMPLE, root)
    proc = _cli("new-row", "--content", root, "golden", "basics", "Ones", "--id", "ones")
    assert proc.returncode == 2 and "row id 'ones' is taken" in proc.stderr
    proc = _cli("new-row", "--content", root, "golden", "basic", "X")
    assert proc.returncode == 2 and "no section 'basic'" in proc.stderr and "did you mean 'basics'" in proc.stderr


def test_skeleton_is_valid_for_every_lane():
    columns = [type("C", (), {"id": lane.replace("@", "-"), "name": lane, "lanes": (lane,)})() for lane in LANES]
    text = newrow.skeleton("r", 'A "quoted" title', columns)
    assert text.count("raise NotImplementedError") == 2 * len(columns)
    assert all(LANES[lane].skeleton for lane in LANES)  # a lane is added with its skeleton, in lanes.py alone


def test_changed_since_lists_only_edited_and_new_rows(tmp_path):
    repo = tmp_path / "repo"
    root = write_content(repo / "content", {"s.yaml": section(code_row("a", "x = 1", "assert x"), code_row("b", "y = 2", "assert y"))})
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "base"], cwd=repo, check=True)
    assert changes.changed_rows(root, "HEAD") == set()
    write_content(repo / "content", {"s.yaml": section(code_row("a", "x = 1", "assert x"), code_row("b", "y = 3", "assert y"), code_row("c", "z = 1", "assert z"))})
    assert changes.changed_rows(root, "HEAD") == {"t/b", "t/c"}
    proc = _cli("verify", "--content", root, "--cache", str(tmp_path / "cache"), "--changed-since", "HEAD", "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert "2 row(s) changed since HEAD: t/b t/c" in proc.stderr
    assert summary_counts(proc.stderr) == (2, 0, 0)


def test_changed_since_compares_rows_as_written_when_the_old_content_breaks_a_newer_rule(tmp_path):
    # the old content fails today's loader (here: a row with no check, which `check` now refuses); the
    # rows are then compared as written, so one edited row is one changed row, not the whole content
    repo = tmp_path / "repo"
    root = write_content(repo / "content", {"s.yaml": section(code_row("a", "x = 1", "assert x"), code_row("b", "y = 2", "assert y"), code_row("old", "w = 1", "assert w"))})
    path = repo / "content" / "t" / "s.yaml"
    text = path.read_text()
    path.write_text(text.replace("rows:", "rows:\n  - {id: broken, title: Broken, cells: {a: {code: 'v = 1'}}, unknown_field: 1}", 1))
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "base"], cwd=repo, check=True)
    with pytest.raises(ContentInvalid):
        content.load(root)
    write_content(repo / "content", {"s.yaml": section(code_row("a", "x = 1", "assert x"), code_row("b", "y = 3", "assert y"), code_row("c", "z = 1", "assert z"))})
    assert changes.changed_rows(root, "HEAD") == {"t/b", "t/c"}


def test_coverage_counts_cells(tmp_path):
    sheets = content.load(SAMPLE)
    cov = coverage.sheet_coverage(sheets[0])
    assert cov["counts"] == {"rows": 2, "code": 3, "checked": 1, "unchecked": 2, "text": 2, "none": 1, "gpu": 0, "cpu_only": 3}
    text = coverage.report(sheets)
    assert "golden: 2 rows; 3 code cells (1 with a check, 2 without), 2 text, 1 none" in text
