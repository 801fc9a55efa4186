"""`verify --explain ROW` says why a cell runs; `cache prune` removes what no cell can use."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import ROOT, code_row, section, write_content


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "generator", *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


def _write(tmp_path, check: str, code: str = "x = 2") -> str:
    return write_content(tmp_path / "content", {"s.yaml": section(code_row("r", code, check))})


def test_explain_names_the_part_that_changed_and_the_cached_cells(tmp_path):
    cache = str(tmp_path / "cache")
    content_dir = _write(tmp_path, "assert x == 2")
    first = _cli("verify", "--explain", "r", "--content", content_dir, "--cache", cache)
    assert first.returncode == 0 and "t/r [pytorch] in python: runs: no earlier run" in first.stdout, first.stdout + first.stderr
    assert _cli("verify", "--content", content_dir, "--cache", cache, "--quiet").returncode == 0
    cached = _cli("verify", "--explain", "t/r", "--content", content_dir, "--cache", cache)
    assert "t/r [pytorch] in python: from the cache (passed on" in cached.stdout, cached.stdout
    _write(tmp_path, "assert x == 2, x")
    edited = _cli("verify", "--explain", "r", "--content", content_dir, "--cache", cache)
    assert "runs: its check changed" in edited.stdout and "code" not in edited.stdout.split("runs:")[1], edited.stdout


def test_explain_says_a_failed_cell_was_not_cached(tmp_path):
    cache = str(tmp_path / "cache")
    content_dir = _write(tmp_path, "assert x == 3")
    assert _cli("verify", "--content", content_dir, "--cache", cache, "--quiet").returncode == 1
    explained = _cli("verify", "--explain", "r", "--content", content_dir, "--cache", cache)
    assert "runs: its last run ended 'failed' (only passed results are cached)" in explained.stdout, explained.stdout


def test_prune_removes_the_results_of_edited_cells_and_keeps_the_current_ones(tmp_path):
    cache = str(tmp_path / "cache")
    content_dir = _write(tmp_path, "assert x == 2")
    assert _cli("verify", "--content", content_dir, "--cache", cache, "--quiet").returncode == 0
    _write(tmp_path, "assert x == 4", code="x = 4")
    assert _cli("verify", "--content", content_dir, "--cache", cache, "--quiet").returncode == 0
    entries = lambda: sorted(f for _, _, files in os.walk(os.path.join(cache, "results")) for f in files)  # noqa: E731
    assert len(entries()) == 2
    dry = _cli("cache", "prune", "--dry-run", "--content", content_dir, "--cache", cache)
    assert "would remove 1 result(s)" in dry.stdout and len(entries()) == 2, dry.stdout + dry.stderr
    pruned = _cli("cache", "prune", "--content", content_dir, "--cache", cache)
    assert "removed 1 result(s)" in pruned.stdout and "kept 1" in pruned.stdout, pruned.stdout
    rebuilt = _cli("verify", "--explain", "r", "--content", content_dir, "--cache", cache)
    assert "from the cache" in rebuilt.stdout, rebuilt.stdout


def test_a_dependency_of_the_lanes_packages_is_in_the_key_and_explain_names_it(tmp_path, monkeypatch):
    from generator import versions as versions_module
    from generator.lanes import LANES
    from generator.load import content
    from generator.verify import cache as cache_module
    from generator.verify import explain
    from generator.verify.verification import plan, verify

    content_dir = _write(tmp_path, "assert x == 2")
    cache = cache_module.Cache(str(tmp_path / "cache"))
    sheets = content.load(content_dir)
    verify(sheets, cache=cache, cores=1, show_progress=False)
    before = plan(sheets)
    real = versions_module.lane_distributions(LANES["python"].packages)
    assert "numpy" in real

    original = versions_module.lane_distributions

    def with_new_dependency(packages):
        return {**original(packages), "fake-dependency": "9.9"}

    monkeypatch.setattr(cache_module, "lane_distributions", with_new_dependency)
    monkeypatch.setattr(explain, "lane_distributions", with_new_dependency)
    after = plan(sheets)
    assert [job.key for job in after] != [job.key for job in before]  # a dependency moved: the result may have
    assert [job.identity for job in after] == [job.identity for job in before]  # ...but the cell is the same cell
    lines = explain.explain(after, cache, LANES)
    assert "dependencies of the lane's packages changed: fake-dependency absent -> 9.9" in lines[0], lines
