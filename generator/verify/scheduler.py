"""Which lane gets the next free core: the scheduling policy, as a pure function of the queues.

Each free core goes to the lane with the most estimated work left, its worker's import included
while that worker has not started; within a lane the runner hands out the longest job first. A
lane whose worker is still importing waits (its jobs cannot start yet), and a job that needs more
cores than are free (torch-dist's two ranks) waits for them, unless its worker has yet to start:
starting a worker takes one core.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class WorkerState(Enum):
    NONE = "none"  # no worker yet: starting one is the next step
    STARTING = "starting"  # importing its framework
    READY = "ready"


@dataclass(frozen=True)
class Queue:
    """A lane worker's waiting jobs, as the policy sees them."""

    key: str  # the worker key (lanes with the same imports and environment share a worker)
    remaining: float  # estimated seconds of the waiting jobs
    import_s: float  # estimated seconds for its worker to import its framework
    worker: WorkerState
    slots: int  # cores the next job takes


def next_lane(queues: list[Queue], free: int) -> str | None:
    """The key of the queue the next free core goes to, or None when nothing can start now."""
    if free <= 0:
        return None
    best: tuple[float, str] | None = None
    for queue in queues:
        remaining = queue.remaining
        if queue.worker is WorkerState.NONE:
            remaining += queue.import_s
        elif queue.worker is WorkerState.STARTING:
            continue
        if queue.slots > free and queue.worker is not WorkerState.NONE:
            continue
        if best is None or remaining > best[0]:
            best = (remaining, queue.key)
    return best[1] if best else None
