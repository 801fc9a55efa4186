"""The warnings channel: what a build goes on without is said in its summary and counted, and --strict
(or CI=true) makes it a failure. Each case failed silently before the channel."""

from __future__ import annotations

import errno
import os

import pytest

from generator import cli, versions
from generator.verify import cache as cache_module
from generator.verify.cache import Cache
from tests.conftest import code_row, section, write_content


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    return write_content(tmp_path, {"s.yaml": section(code_row("a", "x = 1", "assert x == 1"))})


def _verify(root, cache, *more) -> list:
    return ["verify", "--content", root, "--cache", str(cache), "--quiet", "--jobs", "1", *more]


def test_a_full_disk_is_a_warning_and_strict_fails(root, tmp_path, monkeypatch, capsys):
    def full(path, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(cache_module, "write_temp", full)
    assert cli.main(_verify(root, tmp_path / "cache")) == 0
    err = capsys.readouterr().err
    assert f"warning: a result could not be stored in {tmp_path / 'cache'} (No space left on device): the next build runs its job again" in err
    assert "1 warning(s): the build went on without what they name" in err
    assert cli.main(_verify(root, tmp_path / "cache", "--strict")) == 1
    assert "--strict: 1 warning(s) fail this command" in capsys.readouterr().err
    monkeypatch.setenv("CI", "true")
    assert cli.main(_verify(root, tmp_path / "cache")) == 1


def test_a_cache_entry_that_cannot_be_parsed_is_a_warning_not_an_empty_cache(root, tmp_path, capsys):
    assert cli.main(_verify(root, tmp_path / "cache")) == 0
    entries = [os.path.join(folder, name) for folder, _, names in os.walk(tmp_path / "cache" / "results") for name in names]
    assert len(entries) == 1
    with open(entries[0], "w") as handle:
        handle.write('{"key": "cut sh')
    capsys.readouterr()
    assert cli.main(_verify(root, tmp_path / "cache")) == 0
    err = capsys.readouterr().err
    assert f"warning: cache entry {entries[0]} could not be read (JSONDecodeError:" in err and "its job runs again" in err
    assert "1 warning(s)" in err


def test_a_missing_entry_is_a_plain_miss():
    store = Cache("/nonexistent-cache-folder")
    assert store.get("ab" * 32) is None and store.load_timings() == {}
    assert len(store.warnings) == 0


def test_a_dependency_that_cannot_be_read_stays_in_the_key_and_is_a_warning(monkeypatch):
    class Dist:
        version = "1.0"
        requires = ["numpy>=1", "not a requirement((("]

    real = versions.metadata.distribution
    monkeypatch.setattr(versions.metadata, "distribution", lambda name: Dist() if name == "fakepkg" else real(name))
    versions._distribution.cache_clear()
    versions.lane_distributions.cache_clear()
    try:
        found = versions.lane_distributions(("fakepkg",))
        assert found["fakepkg"] == "1.0" and "numpy" in found
        assert found["fakepkg requires 'not a requirement((('"] == "unreadable"  # in the key as written
        (problem,) = versions.distribution_problems(("fakepkg",))
        assert problem.startswith("fakepkg declares a requirement that cannot be parsed")
    finally:
        versions._distribution.cache_clear()
        versions.lane_distributions.cache_clear()
