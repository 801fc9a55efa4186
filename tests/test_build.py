"""The build's own integrity: reproducible output, safe interruption, concurrent builds, caching."""

from __future__ import annotations

import filecmp
import os
import signal
import subprocess
import sys
import time

from tests.conftest import ROOT, code_row, section, write_content


def _build(content_dir, out, cache, *extra, check=True):
    proc = subprocess.run(
        [sys.executable, "-m", "generator", "build", "--content", str(content_dir), "--out", str(out), "--cache", str(cache), "--quiet", "--no-benchmarks", *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def _tree(path) -> dict[str, bytes]:
    files = {}
    for root, _, names in os.walk(path):
        for name in names:
            full = os.path.join(root, name)
            with open(full, "rb") as handle:
                files[os.path.relpath(full, path)] = handle.read()
    return files


def _content(tmp_path, *rows):
    return write_content(tmp_path / "content", {"s.yaml": section(*rows)})


def test_second_build_runs_nothing_and_is_byte_identical(tmp_path):
    root = _content(tmp_path, code_row("a", "x = 1", "assert x == 1"), code_row("b", "import numpy\ny = numpy.ones(2)", "assert y.sum() == 2"))
    first = _build(root, tmp_path / "site", tmp_path / "cache")
    assert "passed" in first.stderr
    snapshot = _tree(tmp_path / "site")
    second = _build(root, tmp_path / "site", tmp_path / "cache")
    assert "ran 0 cell(s) in 0 lane worker(s)" in second.stderr
    assert _tree(tmp_path / "site") == snapshot
    _build(root, tmp_path / "site2", tmp_path / "cache")
    assert _tree(tmp_path / "site2") == snapshot


def test_only_runs_the_named_row(tmp_path):
    root = _content(tmp_path, code_row("a", "x = 1"), code_row("b", "y = 2"))
    proc = subprocess.run(
        [sys.executable, "-m", "generator", "verify", "--content", root, "--cache", str(tmp_path / "cache"), "--only", "b", "--quiet"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "total        1       0       0" in proc.stderr


def test_failing_cell_keeps_the_last_good_site(tmp_path):
    root = _content(tmp_path, code_row("a", "x = 1", "assert x == 1"))
    _build(root, tmp_path / "site", tmp_path / "cache")
    good = _tree(tmp_path / "site")
    broken = _content(tmp_path, code_row("a", "x = 1", "assert x == 2"))
    proc = _build(broken, tmp_path / "site", tmp_path / "cache", check=False)
    assert proc.returncode == 1
    assert "the last good site" in proc.stderr
    assert 'File "' in proc.stderr and "s.yaml\", line" in proc.stderr
    assert _tree(tmp_path / "site") == good
    proc = _build(broken, tmp_path / "site", tmp_path / "cache", "--keep-going", check=False)
    assert proc.returncode == 1
    assert b"status-failed" in _tree(tmp_path / "site")["t.html"]


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as handle:
                    stat = handle.read()
            except OSError:
                continue
            ppid = int(stat[stat.rfind(b")") + 2 :].split()[1])
            children.setdefault(ppid, []).append(int(name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return b") Z" not in handle.read()
    except OSError:
        return False


def test_interrupted_build_keeps_site_reaps_workers_and_keeps_cache(tmp_path):
    fast = code_row("fast", "x = 1", "assert x == 1")
    root = _content(tmp_path, fast)
    _build(root, tmp_path / "site", tmp_path / "cache")
    good = _tree(tmp_path / "site")
    root = _content(tmp_path, fast, code_row("fast2", "y = 2"), code_row("slow", "import time\ntime.sleep(120)", timeout=200))
    for sig in (signal.SIGINT, signal.SIGTERM):
        proc = subprocess.Popen(
            [sys.executable, "-m", "generator", "build", "--content", root, "--out", str(tmp_path / "site"), "--cache", str(tmp_path / "cache"), "--quiet", "--no-benchmarks"],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        deadline = time.time() + 60
        family: set[int] = set()
        while time.time() < deadline:  # wait until the slow cell runs: worker plus cell process
            family |= _descendants(proc.pid)
            if len(_descendants(proc.pid)) >= 2:
                break
            time.sleep(0.2)
        time.sleep(1.0)
        family |= _descendants(proc.pid)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 130, err
        assert "last good site" in err
        deadline = time.time() + 10
        while any(_alive(p) for p in family) and time.time() < deadline:
            time.sleep(0.1)
        assert not [p for p in family if _alive(p)], f"{sig!r} left processes behind"
        assert _tree(tmp_path / "site") == good
        assert not [n for n in os.listdir(tmp_path) if n.startswith(".site.new-")]
    # the cache is usable: the cells that finished before the interrupt are not run again
    proc = subprocess.run(
        [sys.executable, "-m", "generator", "verify", "--content", root, "--cache", str(tmp_path / "cache"), "--only", "fast", "--only", "fast2", "--quiet"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "total        0       0       2" in proc.stderr


def test_concurrent_builds_do_not_corrupt_cache_or_interleave_site(tmp_path):
    rows = [code_row(f"r{i}", f"x = {i}", f"assert x == {i}") for i in range(6)]
    root = _content(tmp_path, *rows)
    command = [sys.executable, "-m", "generator", "build", "--content", root, "--out", str(tmp_path / "site"), "--cache", str(tmp_path / "cache"), "--quiet", "--no-benchmarks", "--jobs", "1"]
    procs = [subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    for proc in procs:
        proc.communicate(timeout=300)
        assert proc.returncode == 0
    site = _tree(tmp_path / "site")
    _build(root, tmp_path / "reference", tmp_path / "cache")
    assert site == _tree(tmp_path / "reference")
    assert not filecmp.dircmp(tmp_path / "site", tmp_path / "reference").diff_files
