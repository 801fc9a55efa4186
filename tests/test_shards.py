"""Sharded verification: the partition, the bundles, and a merged build equal to a single one."""

from __future__ import annotations

import io
import json
import os
import random
import re
import shutil
import subprocess
import sys
import zipfile

import pytest

from generator.load import content
from generator.model import Result
from generator.verify import shards
from generator.verify.shards import Item, MergeError, balance, check_bundles, loads, make_bundle, partition
from generator.verify.verification import plan
from tests.conftest import ROOT, code_row, section, write_content


def _generator(*args, check=True):
    proc = subprocess.run([sys.executable, "-m", "generator", *map(str, args)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def _rows(count=6, failing=None):
    rows = [code_row(f"r{i}", f"import numpy\nx = numpy.arange({i + 2})", f"assert x.sum() == {sum(range(i + 2))}") for i in range(count)]
    if failing is not None:
        rows[failing] = code_row(f"r{failing}", "x = 1", "assert x == 2")
    return rows


def _content(tmp_path, rows, name="content"):
    return write_content(tmp_path / name, {"s.yaml": section(*rows)})


def _shard(root, cache, k, n, bundle, *extra, check=True):
    return _generator("verify", "--content", root, "--cache", cache, "--shard", f"{k}/{n}", "--bundle", bundle, "--quiet", *extra, check=check)


def _build(root, cache, out, *extra, check=True):
    return _generator("build", "--content", root, "--cache", cache, "--out", out, "--quiet", "--no-benchmarks", *extra, check=check)


def _tree(path) -> dict[str, bytes]:
    """Every file of a site, the offline zip's members as files of their own."""
    files = {}
    for folder, _, names in os.walk(path):
        for name in names:
            full = os.path.join(folder, name)
            with open(full, "rb") as handle:
                data = handle.read()
            rel = os.path.relpath(full, path)
            files[rel] = data
            if name.endswith(".zip"):
                with zipfile.ZipFile(io.BytesIO(data)) as archive:
                    for info in archive.infolist():
                        files[f"{rel}!{info.filename}"] = archive.read(info)
    return files


# Where a site shows how long a run took (html.py: the lane's duration span, in the page or in runs.js, the
# report's sortable cell, the JSON and CSV `duration` fields, and the data scripts' hash). Two runs of a cell never measure the same time, so only these are masked.
_DURATIONS = (
    (re.compile(rb'<span class="duration">[^<]*</span>'), b'<span class="duration">D</span>'),
    # a badge's runs, loaded on opening from data/<sheet>.runs.js (HTML inside a JSON string)
    (re.compile(rb'<span class=\\"duration\\">[^<]*</span>'), b'<span class="duration">D</span>'),
    # the version of the data scripts every page names: a hash of them, runs.js (durations) included
    (re.compile(rb'data-build="[0-9a-f]+"'), b'data-build="D"'),
    (re.compile(rb'<td data-sort="[0-9.e-]+" class="num">[^<]*</td>'), b'<td data-sort="D" class="num">D</td>'),
    (re.compile(rb'"duration": ?[0-9.e-]+'), b'"duration":D'),
    (re.compile(rb"^((?:[^,\n]*,){6})[0-9.e-]+,", re.M), rb"\1D,"),  # the CSV's 7th column is `duration`
)


def _masked(tree: dict[str, bytes]) -> tuple[dict[str, bytes], int]:
    out, count = {}, 0
    for name, data in tree.items():
        if name.endswith(".zip"):
            continue  # compared member by member
        for pattern, replacement in _DURATIONS:
            if name.endswith(".csv") != (pattern is _DURATIONS[-1][0]):
                continue
            data, n = pattern.subn(replacement, data)
            count += n
        out[name] = data
    return out, count


def test_sharded_build_equals_a_single_build(tmp_path):
    """Two shards in separate processes with separate caches, merged into a third cache: the build runs no cell and
    its site is the single build's site. Cold (the shards run every cell) the sites differ only in the measured
    durations, masked and counted; warm (each shard's cache a copy of the single build's) they are byte-identical."""
    root = _content(tmp_path, _rows())
    single = _build(root, tmp_path / "single-cache", tmp_path / "single")
    assert "ran 6 cell(s)" in single.stderr
    for k in (1, 2):
        out = _shard(root, tmp_path / f"cache-{k}", k, 2, tmp_path / f"b{k}.json")
        assert f"shard {k}/2: 3 of 6 job(s)" in out.stderr
    bundles = [tmp_path / "b1.json", tmp_path / "b2.json"]
    first, second = (set(json.loads(b.read_text())["jobs"]) for b in bundles)
    assert first and second and not first & second and len(first | second) == 6
    merged = _build(root, tmp_path / "merged-cache", tmp_path / "merged", "--merge", *bundles)
    assert "ran 0 cell(s) in 0 lane worker(s)" in merged.stderr
    a, b = _tree(tmp_path / "single"), _tree(tmp_path / "merged")
    assert sorted(a) == sorted(b)
    (ma, na), (mb, nb) = _masked(a), _masked(b)
    assert na == nb and na >= 6 * 4  # every code cell's duration, in the sheet, report, JSON and CSV
    assert ma == mb, [name for name in ma if ma[name] != mb[name]]

    for k in (1, 2):  # warm: the shards take the single build's results, the pipeline must change no byte
        shutil.copytree(tmp_path / "single-cache", tmp_path / f"warm-{k}")
        _shard(root, tmp_path / f"warm-{k}", k, 2, tmp_path / f"w{k}.json")
    _build(root, tmp_path / "warm-merged", tmp_path / "warm-site", "--merge", tmp_path / "w1.json", tmp_path / "w2.json")
    assert _tree(tmp_path / "warm-site") == a


def test_a_missing_shard_fails_the_build_naming_it(tmp_path):
    root = _content(tmp_path, _rows(4))
    for k in (1, 3):
        _shard(root, tmp_path / "cache", k, 3, tmp_path / f"b{k}.json")
    proc = _build(root, tmp_path / "merged", tmp_path / "site", "--merge", tmp_path / "b1.json", tmp_path / "b3.json", check=False)
    assert proc.returncode == 1
    assert "shard 2/3 missing" in proc.stderr
    assert not (tmp_path / "site").exists()
    assert not (tmp_path / "merged" / "results").exists()  # nothing imported
    proc = _generator("verify", "--content", root, "--cache", tmp_path / "merged", "--merge", tmp_path / "b1.json", tmp_path / "nowhere.json", check=False)
    assert proc.returncode == 1 and "nowhere.json: cannot be read" in proc.stderr


def test_a_bundle_with_a_failed_cell_fails_the_merge_naming_the_shard(tmp_path):
    root = _content(tmp_path, _rows(4, failing=1))
    statuses = {k: _shard(root, tmp_path / f"c{k}", k, 2, tmp_path / f"b{k}.json", check=False).returncode for k in (1, 2)}
    owner = next(k for k in (1, 2) if "t/r1/pytorch@python" in json.loads((tmp_path / f"b{k}.json").read_text())["jobs"])
    assert statuses == {owner: 1, 3 - owner: 0}
    proc = _build(root, tmp_path / "merged", tmp_path / "site", "--merge", tmp_path / "b1.json", tmp_path / "b2.json", check=False)
    assert proc.returncode == 1
    assert f"shard {owner}/2 ({tmp_path / f'b{owner}.json'}): failed: t/r1/pytorch@python" in proc.stderr
    assert not (tmp_path / "site").exists()


def test_a_bundle_from_another_plan_is_refused(tmp_path):
    root = _content(tmp_path, _rows(3))
    for k in (1, 2):
        _shard(root, tmp_path / "cache", k, 2, tmp_path / f"b{k}.json")
    changed = _content(tmp_path, _rows(3)[:2] + [code_row("r2", "y = 3", "assert y == 3")], name="changed")
    proc = _generator("verify", "--content", changed, "--cache", tmp_path / "merged", "--merge", tmp_path / "b1.json", tmp_path / "b2.json", check=False)
    assert proc.returncode == 1
    assert "shard 1/2" in proc.stderr and "is from another plan" in proc.stderr
    proc = _generator("verify", "--content", root, "--cache", tmp_path / "merged", "--merge", tmp_path / "b1.json", tmp_path / "b2.json")
    assert "merged 2 bundle(s): 3 passed result(s)" in proc.stderr and "ran 0 cell(s)" in proc.stderr
    (tmp_path / "torn.json").write_text(json.dumps({"format": shards.FORMAT, "shard": {"index": 1, "count": 2}}))
    proc = _generator("verify", "--content", root, "--cache", tmp_path / "m2", "--merge", tmp_path / "torn.json", check=False)
    assert proc.returncode == 1 and "torn.json: incomplete" in proc.stderr


def _jobs(tmp_path, count=6):
    return plan(content.load(_content(tmp_path, _rows(count))))


def _passed(jobs):
    return {job.id: Result(status="passed", duration=0.1, date="2026-01-01") for job in jobs}


def test_bundles_partitioned_with_other_timings_are_refused(tmp_path):
    jobs = _jobs(tmp_path)
    results = _passed(jobs)
    even, _ = shards.assign(jobs, 2, {})
    skewed, _ = shards.assign(jobs, 2, {jobs[0].id: 50.0, jobs[1].id: 1.0})
    assert even != skewed
    for name, parts, k in (("a", even, 1), ("b", skewed, 2)):
        (tmp_path / f"{name}.json").write_text(json.dumps(make_bundle(k, 2, jobs, parts, results, {}, {})))
    with pytest.raises(MergeError, match="partitioned the plan differently"):
        check_bundles([str(tmp_path / "a.json"), str(tmp_path / "b.json")], jobs)
    (tmp_path / "c.json").write_text(json.dumps(make_bundle(2, 2, jobs, even, results, {}, {})))
    assert len(check_bundles([str(tmp_path / "a.json"), str(tmp_path / "c.json")], jobs)) == 2
    with pytest.raises(MergeError, match="shard 1/2 given twice"):
        check_bundles([str(tmp_path / "a.json"), str(tmp_path / "a.json")], jobs)


def _synthetic(seed=16, lanes=8, jobs=600):
    """Jobs over lanes of very different sizes, durations long-tailed as the real content's are."""
    rng = random.Random(seed)
    imports = {f"lane{i}": rng.uniform(1.0, 8.0) for i in range(lanes)}
    weights = [2 ** -i for i in range(lanes)]
    items = [Item(f"job{j:04d}", rng.choices(list(imports), weights)[0], rng.lognormvariate(-0.5, 1.0)) for j in range(jobs)]
    return items, imports


def test_partition_is_deterministic_and_covers_every_job_once():
    items, imports = _synthetic()
    parts = partition(items, imports, 4)
    assert sorted(i for part in parts for i in part) == sorted(item.id for item in items)
    shuffled = items[:]
    random.Random(1).shuffle(shuffled)
    assert partition(shuffled, dict(reversed(list(imports.items()))), 4) == parts
    # in another process (another hash seed), from the same inputs: the same partition
    code = ("import json, sys; from tests.test_shards import _synthetic; from generator.verify.shards import partition; "
            "items, imports = _synthetic(); print(json.dumps(partition(items, imports, 4)))")
    other = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "123"})
    assert json.loads(other.stdout) == parts, other.stderr


@pytest.mark.parametrize("count", [2, 4, 8])
def test_partition_balance_on_a_synthetic_set(count):
    items, imports = _synthetic()
    parts = partition(items, imports, count)
    work = loads(parts, items, imports)
    ratio = balance(work)
    lane_starts = sum(len({item.group for item in items if item.id in set(part)}) for part in parts)
    print(f"{count} shards: max/mean {ratio:.3f}, {lane_starts} lane worker starts for {len(imports)} lanes, work {[round(w) for w in work]}")
    assert ratio < 1.05
    assert lane_starts < len(imports) * count  # lanes are not spread over every shard
    small = min(imports, key=lambda g: sum(i.cost for i in items if i.group == g))
    assert sum(any(i.group == small for i in items if i.id in set(part)) for part in parts) == 1  # a small lane stays whole


def test_an_empty_shard_is_fine_and_k_of_n_is_checked():
    items = [Item("a", "g", 1.0)]
    assert partition(items, {"g": 1.0}, 3) == [["a"], [], []]
    assert shards.parse_shard("2/3") == (2, 3)
    for bad in ("0/2", "3/2", "x", "1/2/3"):
        with pytest.raises(ValueError):
            shards.parse_shard(bad)
