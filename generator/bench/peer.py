"""The shared-kernel peer that `make enginebench` measures verification against.

The same jobs, run the way a Jupyter-style executor runs notebooks: one long-lived interpreter (a
"kernel") per lane worker, importing the lane once, then executing every cell in it, one after
another, each in a fresh namespace dict and nothing else isolated (global framework state, the
working directory, threads and imports are shared between cells); `cores` kernels at a time, the
lane with the most work first. No fork, no subprocess per cell, no output capture beyond discarding
it: the floor of what running cells costs, given up isolation. Multi-process cells (torch-dist)
are left out: a kernel cannot be two ranks.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

from generator.lanes import Lane
from generator.model import Job
from generator.verify.lane_worker import worker_env

# The kernel: the lane's imports and prelude once, then one cell per line of stdin. Its own
# stdout is kept for the protocol; the cells' output goes to /dev/null.
KERNEL = r"""
import importlib, json, linecache, os, signal, sys, time
config = json.loads(sys.argv[1])
for name in config["imports"]:
    importlib.import_module(name)
for name in config["optional_imports"]:
    try:
        importlib.import_module(name)
    except ImportError:
        pass
exec(config["prelude"], {})
protocol = os.fdopen(os.dup(1), "w", buffering=1)
null = os.open(os.devnull, os.O_WRONLY)
os.dup2(null, 1)
os.dup2(null, 2)

class Timeout(BaseException):
    pass

def _alarm(*_):
    raise Timeout()

signal.signal(signal.SIGALRM, _alarm)
protocol.write("ready\n")
for number, line in enumerate(sys.stdin):
    job = json.loads(line)
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    status, started = "passed", time.perf_counter()
    signal.setitimer(signal.ITIMER_REAL, job["timeout"])
    try:
        for stage in ("setup", "code", "check"):
            if job[stage]:
                # as IPython does: the cell's source in linecache, so inspect (AutoGraph,
                # TorchDynamo) can read it back
                name = f"<cell {number} {stage}>"
                linecache.cache[name] = (len(job[stage]), None, job[stage].splitlines(True), name)
                exec(compile(job[stage], name, "exec"), namespace)
    except Timeout:
        status = "timeout"
    except BaseException:
        status = "failed"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    protocol.write(json.dumps({"status": status, "duration": time.perf_counter() - started}) + "\n")
"""


@dataclass
class PeerReport:
    wall: float = 0.0
    cell_s: dict = field(default_factory=dict)  # by lane worker: seconds in cells
    import_s: dict = field(default_factory=dict)  # by lane worker: seconds to start the kernel
    durations: dict = field(default_factory=dict)  # job id -> seconds in the cell
    outcomes: dict = field(default_factory=dict)  # job id -> status ("crashed" too where a kernel never started)
    left_out: int = 0  # multi-process jobs

    @property
    def statuses(self) -> dict:
        """How many jobs ended in each status."""
        return dict(Counter(self.outcomes.values()))


def run_peer(jobs: list[Job], lanes: dict[str, Lane], cores: int, estimate=lambda job: 1.0) -> PeerReport:
    """Run `jobs` in shared kernels, `cores` at a time; the report's wall is the whole run's."""
    report = PeerReport()
    groups: dict[str, list[Job]] = {}
    for job in jobs:
        lane = lanes[job.lane]
        if lane.processes > 1:
            report.left_out += 1
            continue
        groups.setdefault(lane.worker_key, []).append(job)
    order = sorted(groups, key=lambda key: -sum(estimate(job) for job in groups[key]))
    scratch = tempfile.mkdtemp(prefix="mlsheets-peer-")
    lock = threading.Lock()

    def take() -> str | None:
        with lock:
            return order.pop(0) if order else None

    def kernel_thread() -> None:
        while (key := take()) is not None:
            _run_group(key, groups[key], lanes, scratch, report, lock)

    started = time.perf_counter()
    threads = [threading.Thread(target=kernel_thread) for _ in range(max(1, cores))]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    report.wall = time.perf_counter() - started
    return report


def _run_group(key: str, jobs: list[Job], lanes: dict[str, Lane], scratch: str, report: PeerReport, lock) -> None:
    lane = lanes[jobs[0].lane]
    home = os.path.join(scratch, f"home-{abs(hash(key))}")
    work = os.path.join(scratch, f"work-{abs(hash(key))}")
    os.makedirs(home, exist_ok=True)
    os.makedirs(work, exist_ok=True)
    pending = list(jobs)
    while pending:  # a cell that ends its kernel (os._exit, a crash) costs a restart, as in Jupyter
        config = {"imports": list(lane.imports), "optional_imports": list(lane.optional_imports), "prelude": lane.prelude}
        started = time.perf_counter()
        kernel = subprocess.Popen(
            [sys.executable, "-I", "-c", KERNEL, json.dumps(config)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=worker_env(lane, home, work), cwd=work, text=True, bufsize=1,
        )  # fmt: skip
        ready = kernel.stdout.readline().strip() == "ready"
        with lock:
            report.import_s[key] = report.import_s.get(key, 0.0) + time.perf_counter() - started
        while pending and ready:
            job = pending.pop(0)
            cell = job.cell
            message = {stage: getattr(cell, stage).text if getattr(cell, stage) else "" for stage in ("setup", "code", "check")}
            watchdog = threading.Timer(job.timeout + 30.0, kernel.kill)  # a cell stuck where SIGALRM cannot reach
            watchdog.start()
            try:
                kernel.stdin.write(json.dumps({**message, "timeout": job.timeout}) + "\n")
                kernel.stdin.flush()
                line = kernel.stdout.readline()
            except OSError:
                line = ""
            finally:
                watchdog.cancel()
            result = json.loads(line) if line else {"status": "crashed", "duration": 0.0}
            with lock:
                report.cell_s[key] = report.cell_s.get(key, 0.0) + result["duration"]
                report.durations[job.id] = result["duration"]
                report.outcomes[job.id] = result["status"]
            if not line:
                break
        if not ready:
            with lock:
                report.outcomes.update((job.id, "crashed") for job in pending)
            pending = []
        kernel.kill()
        kernel.wait()


def tally(jobs: list[Job], statuses: dict, judged: bool) -> dict:
    """How many of `jobs` (those in `statuses`, by job id) were cells that passed and how many were
    counterexamples rejected. Ours reports judged statuses (a rejected counterexample "passed");
    the peer its raw outcome, where a counterexample is rejected when it raised (its error text
    unchecked)."""
    counts = {"cells": 0, "cells_passed": 0, "counterexamples": 0, "counterexamples_rejected": 0}
    for job in jobs:
        status = statuses.get(job.id)
        if status is None:
            continue
        if job.counterexample:
            counts["counterexamples"] += 1
            counts["counterexamples_rejected"] += status == ("passed" if judged else "failed")
        else:
            counts["cells"] += 1
            counts["cells_passed"] += status == "passed"
    return counts


def describe(counts: dict) -> str:
    return (f"{counts['cells_passed']:,} of {counts['cells']:,} cells passed, "
            f"{counts['counterexamples_rejected']:,} of {counts['counterexamples']:,} counterexamples rejected")
