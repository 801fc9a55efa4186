"""No module state that changes when read, and no process-wide side effect of a library function or
of the command line run in-process. Each test failed before its fix."""

from __future__ import annotations

import gc
import signal

import pytest

from generator import cli
from generator.errors import ContentError
from generator.lanes import LANES
from generator.load import yamlfile
from tests.conftest import write_content


def test_the_lane_table_does_not_grow_when_a_device_lane_is_read():
    names = list(LANES)
    assert LANES["torch:cuda"].device == "cuda" and LANES["torch:cuda"].name == "torch:cuda"
    assert list(LANES) == names and len(LANES) == len(names)
    assert "torch:cuda" not in LANES  # content may name the base lanes only
    with pytest.raises(TypeError):
        LANES["mine"] = LANES["python"]  # read-only
    with pytest.raises(KeyError):
        LANES["tensorflow:cuda"]  # not a GPU lane


def test_an_error_quotes_the_line_as_the_file_is_now(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("a: 1\nb: old\n")
    assert ContentError(str(path), 2, "x").format().endswith("2 | b: old")
    path.write_text("a: 1\nb: new, and longer\n")
    assert ContentError(str(path), 2, "x").format().endswith("2 | b: new, and longer")


def test_yaml_loading_leaves_the_garbage_collector_alone(monkeypatch):
    calls = []
    monkeypatch.setattr(gc, "disable", lambda: calls.append("disable"))
    monkeypatch.setattr(gc, "enable", lambda: calls.append("enable"))
    data, errors = yamlfile.read("x.yaml", "a: [1, 2]\nb: {c: d}\n")
    assert errors == [] and data["a"] == [1, 2]
    assert calls == []


def test_the_command_line_leaves_no_signal_handler_behind(tmp_path):
    root = write_content(tmp_path, {"a.yaml": "id: a\ntitle: A\nrows: []\n"})
    before = signal.getsignal(signal.SIGTERM)
    assert cli.main(["check", "--content", root]) == 0
    assert signal.getsignal(signal.SIGTERM) is before


def test_the_sandbox_choices_are_the_sandbox_policies():
    from generator.verify import sandbox

    verify = cli.parser()._subparsers._group_actions[0].choices["verify"]
    (option,) = [action for action in verify._actions if "--sandbox" in action.option_strings]
    assert tuple(option.choices) == sandbox.POLICIES
