"""The one way the generator writes a file: whole or not at all, never a shared temporary name."""

from __future__ import annotations

import os
import threading

import pytest

from generator.files import atomic_write, write_json, write_temp


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "state.json"
    write_json(target, {"n": 1})

    class Unencodable(str):
        def encode(self, *args, **kwargs):
            raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        atomic_write(target, Unencodable("x"))
    assert target.read_text() == '{"n": 1}'
    assert os.listdir(tmp_path) == ["state.json"]


def test_concurrent_writers_never_share_a_temporary_file(tmp_path):
    target = tmp_path / "ledger.json"
    names = set()

    def write(n):
        names.add(write_temp(target, chr(65 + n) * 1000))

    threads = [threading.Thread(target=write, args=(n,)) for n in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(names) == 20  # each writer its own file; none replaced another's half-written one
    for name in names:
        text = open(name).read()
        assert text == text[0] * 1000
        os.replace(name, target)
    assert len(target.read_text()) == 1000


def test_written_files_get_the_usual_permissions(tmp_path):
    target = tmp_path / "site-state.json"
    atomic_write(target, "{}")
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat(target).st_mode & 0o777 == 0o666 & ~umask
