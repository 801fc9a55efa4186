"""The cache: a hit, a miss for each part of the key, a corrupt entry."""

from __future__ import annotations

import dataclasses
import os

from generator import versions as versions_module
from generator.lanes import LANES
from generator.model import CODE, Cell, Result, Snippet, Source
from generator.verify import cache as cache_module
from generator.verify.cache import Cache, job_identity, job_key


def _cell(code="x = 1", setup="import os", check="assert x == 1"):
    return Cell("pytorch", CODE, Source("f.yaml", 1), Snippet(code, 2), Snippet(setup, 1), Snippet(check, 3), ("python",))


def test_hit_after_put(tmp_path):
    store = Cache(str(tmp_path))
    key = job_key(_cell(), LANES["python"])
    assert store.get(key) is None
    store.put(key, Result(status="passed", duration=0.5, versions={"numpy": "2"}))
    hit = store.get(key)
    assert hit is not None and hit.cached and hit.duration == 0.5 and hit.versions == {"numpy": "2"}


def test_the_first_stored_result_stays_and_is_returned(tmp_path):
    """Two builds that ran the same cell at once: the second to store gets the first one's result back."""
    store = Cache(str(tmp_path))
    key = job_key(_cell(), LANES["python"])
    first = store.put(key, Result(status="passed", duration=0.123456789, stdout="first"))
    assert first.stdout == "first" and first.duration == 0.1235  # as stored, so a rebuild shows the same
    second = store.put(key, Result(status="passed", duration=9.0, stdout="second"))
    assert second.stdout == "first" and store.get(key).stdout == "first"
    forced = store.put(key, Result(status="passed", duration=2.0, stdout="forced"), replace=True)
    assert forced.stdout == "forced" and store.get(key).stdout == "forced"
    failed = store.put(key, Result(status="failed", error="boom"))
    assert failed.status == "failed" and store.get(key).stdout == "forced"
    assert os.listdir(os.path.dirname(store._path(key))) == [os.path.basename(store._path(key))]  # no temporary left


def test_an_unreadable_entry_is_replaced(tmp_path):
    store = Cache(str(tmp_path))
    key = job_key(_cell(), LANES["python"])
    os.makedirs(os.path.dirname(store._path(key)))
    with open(store._path(key), "w") as handle:
        handle.write("{cut short")
    assert store.put(key, Result(status="passed", stdout="new")).stdout == "new"
    assert store.get(key).stdout == "new"


def test_failures_are_not_cached(tmp_path):
    store = Cache(str(tmp_path))
    key = job_key(_cell(), LANES["python"])
    store.put(key, Result(status="failed", error="boom"))
    assert store.get(key) is None


def test_every_part_of_the_key_matters(monkeypatch):
    base = job_key(_cell(), LANES["python"])
    variants = {
        "code": job_key(_cell(code="x = 2"), LANES["python"]),
        "setup": job_key(_cell(setup="import sys"), LANES["python"]),
        "check": job_key(_cell(check="assert x"), LANES["python"]),
        "lane": job_key(_cell(), LANES["torch"]),
        "lane env": job_key(_cell(), dataclasses.replace(LANES["python"], env={"A": "1"})),
        "processes": job_key(_cell(), dataclasses.replace(LANES["python"], processes=2)),
        "device": job_key(_cell(), dataclasses.replace(LANES["python"], device="cuda")),
    }
    monkeypatch.setattr(cache_module, "runner_code_hash", lambda: "0" * 64)
    variants["runner code"] = job_key(_cell(), LANES["python"])
    monkeypatch.undo()
    variants["expectation"] = job_key(_cell(), LANES["python"], {"fail": True, "raises": ""})
    variants["optional imports"] = job_key(_cell(), dataclasses.replace(LANES["python"], optional_imports=("decimal",)))
    monkeypatch.setattr(cache_module.sys, "version", "3.99.0 (main, Jan  1 2030, 00:00:00) [GCC 12.2.0]")
    variants["python version"] = job_key(_cell(), LANES["python"])
    monkeypatch.undo()
    versions_module.package_version.cache_clear()
    monkeypatch.setattr(versions_module.metadata, "version", lambda name: "0.0-test")
    variants["package versions"] = job_key(_cell(), LANES["python"])
    monkeypatch.undo()
    versions_module.package_version.cache_clear()
    assert job_key(_cell(), LANES["python"]) == base
    for part, key in variants.items():
        assert key != base, part
    assert len(set(variants.values())) == len(variants)


def test_the_identity_leaves_out_the_machine_and_keeps_the_rest(monkeypatch):
    base = job_identity(_cell(), LANES["python"])
    versions_module.package_version.cache_clear()
    monkeypatch.setattr(versions_module.metadata, "version", lambda name: "0.0-test")
    monkeypatch.setattr(cache_module.sys, "version", "3.99.0")
    assert job_identity(_cell(), LANES["python"]) == base  # another machine's versions: the same run
    monkeypatch.undo()
    versions_module.package_version.cache_clear()
    assert job_identity(_cell(code="x = 2"), LANES["python"]) != base
    assert job_identity(_cell(), dataclasses.replace(LANES["python"], device="cuda")) != base
    monkeypatch.setattr(cache_module, "runner_code_hash", lambda: "0" * 64)
    assert job_identity(_cell(), LANES["python"]) != base


def test_moving_a_cell_keeps_its_key():
    moved = Cell("pytorch", CODE, Source("g.yaml", 90), Snippet("x = 1", 92), Snippet("import os", 91), Snippet("assert x == 1", 93), ("python",))
    assert job_key(moved, LANES["python"]) == job_key(_cell(), LANES["python"])


def test_corrupt_entries_are_misses(tmp_path):
    store = Cache(str(tmp_path))
    key = job_key(_cell(), LANES["python"])
    store.put(key, Result(status="passed"))
    path = store._path(key)
    for garbage in (b"", b"{not json", b'{"key": "other", "result": {"status": "passed"}}', b"[1, 2]", b"\xff\xfe"):
        with open(path, "wb") as handle:
            handle.write(garbage)
        assert store.get(key) is None
    os.chmod(path, 0)
    if os.geteuid() != 0:  # root reads anything
        assert store.get(key) is None


def test_corrupt_timings_are_ignored(tmp_path):
    store = Cache(str(tmp_path))
    with open(os.path.join(tmp_path, "timings.json"), "w") as handle:
        handle.write("{oops")
    assert store.load_timings() == {}
    store.save_timings({"a": 1.0})
    assert store.load_timings() == {"a": 1.0}
