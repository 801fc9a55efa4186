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
    assert report.wall > 0 and sum(report.cell_s.values()) > 0.9  # the hang ran until its 1 s alarm
    assert report.left_out == 0
    assert set(report.durations) == {job.id for job in jobs}


def test_cell_costs_measure_a_fork_per_cell_against_exec_in_a_kernel():
    from generator.bench.engine import cell_costs

    (row,) = cell_costs(["python"], cells=3)
    assert row["lane"] == "python"
    # a forked process per cell costs milliseconds; an exec in a warm interpreter, microseconds
    assert row["ours_empty_ms"] > 1.0 > row["peer_empty_ms"], row
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
        assert engine["cells"] == 4 and engine["statuses"] == {"passed": 3, "failed": 1}, engine
        assert engine["wall"] > 0 and engine["cpu_s"] > 0 and sum(engine["cell_s"].values()) > 0
