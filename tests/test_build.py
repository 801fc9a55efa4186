"""The build's own integrity: reproducible output, safe interruption, concurrent builds, caching."""

from __future__ import annotations

import filecmp
import os
import re
import signal
import subprocess
import sys
import time

from tests.conftest import ROOT, code_row, section, summary_counts, write_content


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
    assert summary_counts(first.stderr) == (2, 0, 0)  # both cells ran and passed (not the word in the table's header)
    snapshot = _tree(tmp_path / "site")
    second = _build(root, tmp_path / "site", tmp_path / "cache")
    assert "ran 0 cell(s) in 0 lane worker(s)" in second.stderr
    assert _tree(tmp_path / "site") == snapshot
    _build(root, tmp_path / "site2", tmp_path / "cache")
    assert _tree(tmp_path / "site2") == snapshot


def test_only_runs_the_named_row(tmp_path):
    root = _content(tmp_path, code_row("a", "x = 1", "assert x"), code_row("b", "y = 2", "assert y"))
    proc = subprocess.run(
        [sys.executable, "-m", "generator", "verify", "--content", root, "--cache", str(tmp_path / "cache"), "--only", "b", "--quiet"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert summary_counts(proc.stderr) == (1, 0, 0)


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
    started = _lane_home(tmp_path) / "slow-started"
    slow = code_row("slow", f"open({str(started)!r}, 'w').close()\nimport time\ntime.sleep(120)", timeout=200)
    root = _content(tmp_path, fast, code_row("fast2", "y = 2", "assert y == 2"), slow)

    def cached_entries() -> int:
        return sum(name.endswith(".json") for _, _, names in os.walk(tmp_path / "cache" / "results") for name in names)

    for sig in (signal.SIGINT, signal.SIGTERM):
        started.unlink(missing_ok=True)
        proc = subprocess.Popen(
            [sys.executable, "-m", "generator", "build", "--content", root, "--out", str(tmp_path / "site"), "--cache", str(tmp_path / "cache"), "--quiet", "--no-benchmarks"],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            # a suite started in the background by a shell without job control inherits SIGINT ignored,
            # and Python then keeps it ignored: the interrupt is what this test is about
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        # interrupt once the slow cell runs and fast2 is stored: the states the assertions below are about
        _wait_for(lambda proc=proc: started.exists() and cached_entries() >= 2 and proc.poll() is None, "the slow cell to start and fast2 to be cached")
        family = _descendants(proc.pid)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 130, err
        assert "last good site" in err
        deadline = time.monotonic() + 60  # generous for a loaded machine: it returns as soon as they are gone
        while any(_alive(p) for p in family) and time.monotonic() < deadline:
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
    assert summary_counts(proc.stderr) == (0, 0, 2)


def _barrier_row(row_id: str, folder, count: int, release=None) -> str:
    """A cell that waits until `count` runs of it have arrived in `folder` (and `release` exists), then prints a
    token of its own run: two builds that both run it show different output unless one takes the other's."""
    code = f"""\
import os, time, uuid
folder = {str(folder)!r}
open(os.path.join(folder, uuid.uuid4().hex), "w").close()
deadline = time.monotonic() + 240
while (len(os.listdir(folder)) < {count} or ({str(release)!r} != "None" and not os.path.exists({str(release)!r}))) and time.monotonic() < deadline:
    time.sleep(0.05)
token = uuid.uuid4().hex
print("run", token)
"""
    return code_row(row_id, code, f"assert len(os.listdir(folder)) >= {count}", timeout=300)


def _lane_home(tmp_path):
    """Where a cell of these tests and the test itself can both write: the python lane's home in the
    tests' cache folder, which the sandbox binds writable at its own path (the rest of the machine, the
    test's tmp_path in a private /tmp included, is out of a sandboxed cell's reach)."""
    return tmp_path / "cache" / "home" / "python"


def _wait_for(condition, what: str, limit: float = 240.0):
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.05)


def test_concurrent_builds_of_the_same_content_publish_the_same_site(tmp_path):
    """Both builds run the cell (the barrier holds each until the other has started it), so each has a result of its
    own; the cache keeps the first one stored, and both builds show that one: identical sites, equal to a rebuild."""
    arrived = _lane_home(tmp_path) / "arrived"
    arrived.mkdir(parents=True)
    root = _content(tmp_path, _barrier_row("both", arrived, 2), code_row("plain", "x = 1", "assert x == 1"))
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "generator", "build", "--content", root, "--out", str(tmp_path / name), "--cache", str(tmp_path / "cache"), "--quiet", "--no-benchmarks", "--jobs", "1"],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for name in ("site-a", "site-b")
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
    assert len(os.listdir(arrived)) == 2  # both builds ran the cell
    a, b = _tree(tmp_path / "site-a"), _tree(tmp_path / "site-b")
    assert a == b
    _build(root, tmp_path / "reference", tmp_path / "cache")
    assert a == _tree(tmp_path / "reference")
    assert len(os.listdir(arrived)) == 2  # the rebuild took it from the cache
    shown = set(re.findall(r"run ([0-9a-f]{32})", a["t.html"].decode()))
    assert len(shown) == 1, f"the site shows one run's output: {shown}"


def test_the_build_started_last_keeps_its_site_whichever_finishes_first(tmp_path):
    """Build `old` starts first and is held inside a cell; build `new` (other content) starts after it and finishes
    first. When `old` finishes it must not replace the newer build's site, and it says so."""
    arrived, release = _lane_home(tmp_path) / "arrived", _lane_home(tmp_path) / "release"
    arrived.mkdir(parents=True)
    old_root = write_content(tmp_path / "old", {"s.yaml": section(_barrier_row("held", arrived, 1, release))})
    new_root = write_content(tmp_path / "new", {"s.yaml": section(code_row("fresh", "y = 2", "assert y == 2"))})
    site = tmp_path / "site"
    old = subprocess.Popen(
        [sys.executable, "-m", "generator", "build", "--content", old_root, "--out", str(site), "--cache", str(tmp_path / "cache"), "--quiet", "--no-benchmarks"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        _wait_for(lambda: os.listdir(arrived), "the first build to run its cell")  # it took its ticket before that
        _build(new_root, site, tmp_path / "cache")
        newer = _tree(site)
        assert b"fresh" in newer["t.html"] and b"held" not in newer["t.html"]
        release.touch()
        _, err = old.communicate(timeout=600)
    finally:
        old.kill()
    assert old.returncode == 0, err
    assert "a build started after this one has already written" in err
    assert _tree(site) == newer
    # a build started after both publishes as usual
    _build(old_root, site, tmp_path / "cache")
    assert b"held" in _tree(site)["t.html"]


def test_concurrent_builds_do_not_corrupt_cache_or_interleave_site(tmp_path):
    """Two builds into one site and one cache, made to overlap: each holds in a barrier cell until the other
    has reached it, so both are verifying, storing and then publishing at the same time."""
    arrived = _lane_home(tmp_path) / "arrived"  # where a sandboxed cell can write
    arrived.mkdir(parents=True)
    rows = [code_row(f"r{i}", f"x = {i}", f"assert x == {i}") for i in range(6)]
    root = _content(tmp_path, _barrier_row("both", arrived, 2), *rows)
    command = [sys.executable, "-m", "generator", "build", "--content", root, "--out", str(tmp_path / "site"), "--cache", str(tmp_path / "cache"), "--quiet", "--no-benchmarks", "--jobs", "1"]
    procs = [subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for proc in procs:
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
    assert len(os.listdir(arrived)) == 2  # both builds were inside the barrier cell at once: they overlapped
    site = _tree(tmp_path / "site")
    _build(root, tmp_path / "reference", tmp_path / "cache")
    assert site == _tree(tmp_path / "reference")
    assert not filecmp.dircmp(tmp_path / "site", tmp_path / "reference").diff_files
