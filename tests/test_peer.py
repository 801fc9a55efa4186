"""The shared-kernel peer of make enginebench: one interpreter per lane, cells sharing it."""

from __future__ import annotations

from generator.bench.peer import run_peer
from generator.lanes import LANES
from generator.load import content
from generator.verify.verification import plan
from tests.conftest import code_row, section, write_content


def test_the_peer_runs_cells_in_one_shared_interpreter_and_survives_bad_ones(tmp_path):
    rows = [
        code_row("a-sets", "import builtins\nbuiltins.LEFT_BY_A = 1"),
        code_row("b-sees", "import builtins", "assert builtins.LEFT_BY_A == 1  # shared: what a fork per cell never shows"),
        code_row("c-fails", "x = 1", "assert x == 2"),
        code_row("d-hangs", "while True:\n    pass", timeout=1.0),
        code_row("e-exits", "import os\nos._exit(3)"),
        code_row("f-after", "import builtins", "assert not hasattr(builtins, 'LEFT_BY_A')  # a new kernel after the exit"),
    ]
    root = write_content(tmp_path / "content", {"s.yaml": section(*rows)})
    jobs = plan(content.load(root))
    report = run_peer(jobs, LANES, cores=1)
    assert report.statuses == {"passed": 3, "failed": 1, "timeout": 1, "crashed": 1}, report.statuses
    assert report.wall > 0 and set(report.cell_s) and all(seconds >= 0 for seconds in report.cell_s.values())
    assert report.left_out == 0
    assert set(report.durations) == {job.id for job in jobs}


def test_a_kernel_that_never_starts_counts_each_of_its_cells_crashed(tmp_path):
    from dataclasses import replace

    rows = [code_row(f"r{i}", f"x = {i}", f"assert x == {i}") for i in range(3)]
    root = write_content(tmp_path / "content", {"s.yaml": section(*rows)})
    jobs = [job for job in plan(content.load(root)) if job.lane == "python"]
    lanes = {**LANES, "python": replace(LANES["python"], imports=("no_such_module_for_the_peer",))}
    report = run_peer(jobs, lanes, cores=1)
    assert report.outcomes == {job.id: "crashed" for job in jobs}, report.outcomes
    assert report.statuses == {"crashed": 3}


def test_cell_costs_measure_a_fork_per_cell_against_exec_in_a_kernel():
    from generator.bench.engine import cell_costs

    (row,) = cell_costs(["python"], cells=3)
    assert row["lane"] == "python"
    # both costs are measured (how they compare is the benchmark's finding, not a test's: no clock here)
    assert row["ours_empty_ms"] > 0 and row["peer_empty_ms"] > 0, row
    assert row["ours_first_ms"] > 0 and row["peer_first_ms"] > 0


def test_side_by_side_runs_both_engines_at_once_each_pinned_to_its_own_core(tmp_path):
    import os

    import pytest

    from generator.bench import side_by_side

    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two cores")
    rows = [code_row(f"r{i}", f"x = {i}", f"assert x == {i}") for i in range(3)]
    rows.append(code_row("wrong", "x = 1", "assert x == 2"))
    root = write_content(tmp_path / "content", {"s.yaml": section(*rows)})
    both = side_by_side.measure(root)
    ours, peer = both["ours"], both["peer"]
    assert len(ours["cpus"]) == len(peer["cpus"]) == 1 and ours["cpus"] != peer["cpus"], both
    for engine in (ours, peer):
        assert engine["cells"] == 4, engine
        assert engine["counts"] == {"cells": 4, "cells_passed": 3, "counterexamples": 0, "counterexamples_rejected": 0}, engine
        assert engine["wall"] > 0 and engine["cpu_s"] > 0 and sum(engine["cell_s"].values()) > 0


def test_the_peer_keeps_cell_source_readable_and_tallies_counterexamples_as_ours_does(tmp_path):
    from generator.bench.peer import tally
    from generator.verify.cache import Cache
    from generator.verify.runner import run_jobs

    # inspect reads a function's source back (AutoGraph and TorchDynamo do): a notebook kernel keeps
    # each cell's source in linecache, and so does the peer
    row = code_row("reads-source", "import inspect\ndef f():\n    return 1", "assert 'return 1' in inspect.getsource(f)")
    wrong = "        counterexamples:\n          - why: f must return 1\n            code: |\n              import inspect\n              def f():\n                  return 2\n"
    row = row.replace("      jax: {text: fact}\n", wrong + "      jax: {text: fact}\n")
    root = write_content(tmp_path / "content", {"s.yaml": section(row)})
    jobs = plan(content.load(root))
    assert sorted(job.counterexample for job in jobs) == [0, 1]
    expected = {"cells": 1, "cells_passed": 1, "counterexamples": 1, "counterexamples_rejected": 1}
    peer = run_peer(jobs, LANES, cores=1)
    assert tally(jobs, peer.outcomes, judged=False) == expected, peer.outcomes
    ours = run_jobs(jobs, cache=Cache(str(tmp_path / "cache")), cores=1, show_progress=False)
    assert tally(jobs, ours.statuses(), judged=True) == expected
