"""The scheduling policy, tested as the pure function it is."""

from __future__ import annotations

from generator.verify.scheduler import Queue, WorkerState, next_lane

NONE, STARTING, READY = WorkerState.NONE, WorkerState.STARTING, WorkerState.READY


def test_the_core_goes_to_the_lane_with_most_work_left_import_included():
    queues = [Queue("torch", 50.0, 4.0, READY, 1), Queue("jax", 48.0, 3.0, NONE, 1)]
    assert next_lane(queues, free=1) == "jax"  # 48 + 3 to import > 50
    queues = [Queue("torch", 52.0, 4.0, READY, 1), Queue("jax", 48.0, 3.0, NONE, 1)]
    assert next_lane(queues, free=1) == "torch"


def test_a_lane_still_importing_waits():
    assert next_lane([Queue("jax", 100.0, 3.0, STARTING, 1), Queue("tf", 1.0, 3.0, READY, 1)], free=1) == "tf"
    assert next_lane([Queue("jax", 100.0, 3.0, STARTING, 1)], free=2) is None


def test_a_two_rank_job_waits_for_two_cores_but_its_worker_may_start_on_one():
    dist_ready = Queue("torch-dist", 100.0, 4.0, READY, 2)
    assert next_lane([dist_ready, Queue("tf", 1.0, 3.0, READY, 1)], free=1) == "tf"
    assert next_lane([dist_ready], free=2) == "torch-dist"
    assert next_lane([Queue("torch-dist", 100.0, 4.0, NONE, 2)], free=1) == "torch-dist"


def test_no_free_core_or_no_work_means_nothing_starts():
    assert next_lane([Queue("tf", 1.0, 3.0, READY, 1)], free=0) is None
    assert next_lane([], free=4) is None


def test_ties_go_to_the_first_queue():
    assert next_lane([Queue("a", 5.0, 0.0, READY, 1), Queue("b", 5.0, 0.0, READY, 1)], free=1) == "a"
