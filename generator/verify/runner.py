"""Running jobs: cached results first, then lane workers scheduled over the machine's cores.

The scheduler keeps every core busy while work waits; which lane gets a free core is the policy in
scheduler.py, and within a lane the longest job goes first. A lane worker runs as many cells at
once as the scheduler hands it, so a long lane can use every core. Estimates come from the
durations measured on earlier runs. A worker whose lane has nothing left to run is stopped.
"""

from __future__ import annotations

import datetime
import os
import selectors
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field

from generator.lanes import LANES, Lane
from generator.model import Job, Result, Status
from generator.verify import progress as progress_display
from generator.verify import sandbox as sandboxes
from generator.verify.cache import Cache
from generator.verify.judge import device_evidence, judge_counterexample, not_applicable
from generator.verify.lane_worker import LaneWorker, worker_env
from generator.verify.machine import cpu_description
from generator.verify.scheduler import Queue, WorkerState, next_lane
from generator.versions import lane_versions

DEFAULT_MEMORY_CAP = 6 * 2**30
DEFAULT_JOB_ESTIMATE = 1.0
DEFAULT_IMPORT_ESTIMATE = 3.0
WATCHDOG_GRACE = 30.0


@dataclass
class LaneStats:
    """What one lane worker cost: for the summary table and the benchmark."""

    lanes: set = field(default_factory=set)
    import_s: float = 0.0
    cell_s: float = 0.0  # inside the cells: setup, code and check
    process_s: float = 0.0  # around them: fork, process start and exit, capture, result (worker's wall - cell)
    passed: int = 0
    failed: int = 0
    cached: int = 0


@dataclass
class RunReport:
    results: dict
    stats: dict
    wall: float
    ran: int = 0  # jobs run (not taken from the cache)
    workers: int = 0  # lane workers started
    notes: list = field(default_factory=list)  # what the workers said once (e.g. cells spawned, not forked)

    def statuses(self) -> dict[str, str]:
        """Each job's status by job id (a rejected counterexample is "passed": statuses are judged)."""
        return {job_id: str(result.status) for job_id, result in self.results.items()}


def run_jobs(
    jobs: list[Job],
    *,
    cache: Cache,
    cores: int,
    force: bool = False,
    memory_cap: int = DEFAULT_MEMORY_CAP,
    show_progress: bool = True,
    lanes: dict[str, Lane] | None = None,
    sandbox: str | None = None,
) -> RunReport:
    """Run every job (or take its passed result from the cache) and return the results by job id.
    Lane workers start in the sandbox of `sandbox` (a policy of sandbox.py; default: its default
    policy), which raises SandboxUnavailable before anything runs when it is required and missing."""
    lanes = lanes or LANES
    started = time.perf_counter()
    results: dict[str, Result] = {}
    stats: dict[str, LaneStats] = {}
    pending: dict[str, list[Job]] = {}
    for job in jobs:
        lane = lanes[job.lane]
        group = stats.setdefault(lane.worker_key, LaneStats())
        group.lanes.add(lane.name)
        if job.missing:
            results[job.id] = not_applicable(job, lane)
            continue
        hit = None if force else cache.get(job.key)
        if hit is not None:
            results[job.id] = hit
            group.cached += 1
        else:
            pending.setdefault(lane.worker_key, []).append(job)
    display = progress_display.Progress(jobs, results, enabled=show_progress)
    ran = sum(len(group) for group in pending.values())
    workers = 0
    notes: list[str] = []
    if pending:
        box = sandboxes.resolve(sandbox)
        if not box.active:
            notes.append(f"cells ran without the sandbox: {box.reason}")
        scheduler = _Scheduler(pending, results, stats, cache, cores, memory_cap, lanes, display, force, box)
        scheduler.run()
        workers = scheduler.started
        notes += scheduler.notes
    display.finish()
    return RunReport(results, stats, time.perf_counter() - started, ran, workers, notes)


class _Scheduler:
    def __init__(self, pending, results, stats, cache, cores, memory_cap, lanes, display, force=False, sandbox=None):
        self.force = force
        self.sandbox = sandbox
        self.pending = pending
        self.results = results
        self.stats = stats
        self.cache = cache
        self.cores = max(1, cores)
        self.memory_cap = memory_cap
        self.lanes = lanes
        self.display = display
        self.timings = cache.load_timings()
        self.new_timings: dict[str, float] = {}
        self.workers: dict[str, LaneWorker] = {}
        self.started = 0
        self.restarts: dict[str, int] = {}
        self.notes: list[str] = []
        self.selector = selectors.DefaultSelector()
        self.cpu = cpu_description()
        self.date = datetime.date.today().isoformat()
        for jobs in self.pending.values():
            jobs.sort(key=self._estimate)

    def _estimate(self, job: Job) -> float:
        return self.timings.get(job.id, DEFAULT_JOB_ESTIMATE)

    def _import_estimate(self, key: str) -> float:
        return self.timings.get(f"import:{key}", DEFAULT_IMPORT_ESTIMATE)

    def _busy(self) -> int:
        busy = 0
        for worker in self.workers.values():
            busy += 0 if worker.ready else 1
            busy += sum(slots for _, _, slots in worker.in_flight.values())
        return busy

    def run(self) -> None:
        self.scratch = tempfile.mkdtemp(prefix="mlsheets-scratch-")
        try:
            while any(self.pending.values()) or any(w.in_flight for w in self.workers.values()):
                self._dispatch()
                self._wait()
        finally:
            for worker in self.workers.values():
                worker.kill()
            self.selector.close()
            shutil.rmtree(self.scratch, ignore_errors=True)
            if self.new_timings:
                self.cache.save_timings(self.new_timings)  # a failure is on the cache's warnings

    def _dispatch(self) -> None:
        while True:
            queues = []
            for key, jobs in self.pending.items():
                if not jobs:
                    continue
                worker = self.workers.get(key)
                state = WorkerState.NONE if worker is None else WorkerState.READY if worker.ready else WorkerState.STARTING
                slots = min(self.lanes[jobs[-1].lane].processes, self.cores)
                remaining = sum(self._estimate(job) for job in jobs)
                queues.append(Queue(key, remaining, self._import_estimate(key), state, slots))
            key = next_lane(queues, self.cores - self._busy())
            if key is None:
                return
            worker = self.workers.get(key)
            if worker is None:
                self._start_worker(key)
            else:
                self._send_job(worker, self.pending[key].pop())

    def _start_worker(self, key: str) -> None:
        lane = self.lanes[self.pending[key][-1].lane]
        # absolute: the worker and its cells run in scratch folders, where a relative home would be a new one each time
        home = os.path.abspath(os.path.join(self.cache.root, "home", lane.name.replace("@", "-").replace(":", "-")))
        os.makedirs(home, exist_ok=True)
        config = {
            "imports": list(lane.imports),
            "optional_imports": list(lane.optional_imports),
            "prelude": lane.prelude,
            "scratch": self.scratch,
            "memory_cap": self.memory_cap,
        }
        worker = LaneWorker(key, lane, config, worker_env(lane, home, self.scratch), self.scratch, self.sandbox)
        self.workers[key] = worker
        self.started += 1
        self.selector.register(worker.process.stdout, selectors.EVENT_READ, worker)

    def _send_job(self, worker: LaneWorker, job: Job) -> None:
        lane = self.lanes[job.lane]
        cell = job.cell
        message = {
            "type": "run",
            "id": job.id,
            "path": cell.source.path,
            "abspath": os.path.abspath(cell.source.path),
            "timeout": job.timeout,
            "processes": lane.processes,
            "device": lane.device,
            "default_device": lane.default_device,
            "expose": job.expose,
        }
        for part in ("setup", "code", "check"):
            snippet = getattr(cell, part)
            message[part] = {"text": snippet.text, "line": snippet.line} if snippet else None
        slots = min(lane.processes, self.cores)
        worker.in_flight[job.id] = (job, time.perf_counter(), slots)
        try:
            worker.send(message)
        except (BrokenPipeError, OSError):
            self._worker_died(worker, "the lane worker stopped taking jobs")

    def _wait(self) -> None:
        for selected, _ in self.selector.select(timeout=0.5):
            worker = selected.data
            try:
                for message in worker.messages():
                    self._handle(worker, message)
            except (EOFError, ValueError, OSError):
                self._worker_died(worker, "the lane worker died")
        now = time.perf_counter()
        for worker in list(self.workers.values()):
            for job, started, _ in list(worker.in_flight.values()):
                if now - started > job.timeout + WATCHDOG_GRACE:
                    self._worker_died(worker, "the lane worker stopped answering")
                    break
        self._stop_idle()
        self.display.update()

    def _stop_idle(self) -> None:
        """Stop the workers whose lanes have nothing left to run: each holds its framework in memory
        (0.3-0.8 GB), and the lanes still running need it more."""
        for key, worker in list(self.workers.items()):
            if worker.ready and not worker.in_flight and not self.pending.get(key):
                self._drop(worker)

    def _handle(self, worker: LaneWorker, message: dict) -> None:
        group = self.stats[worker.key]
        if message["type"] == "ready":
            if message.get("error"):
                self._fail_lane(worker, f"the lane could not start: {message['error']}")
                return
            worker.ready = True
            worker.versions = message.get("versions", {})
            group.import_s += message["import_s"]
            self.new_timings[f"import:{worker.key}"] = message["import_s"]
            return
        if message["type"] == "note":
            self.notes.append(f"{worker.lane.name}: {message['text']}")
            return
        job, _, _ = worker.in_flight.pop(message["id"])
        lane = self.lanes[job.lane]
        device = self.cpu
        used_device, detail = None, ""
        if message.get("device_info") is not None:
            info = message["device_info"]
            known = [f"driver {info['driver']}"] if info.get("driver") else []
            known += [f"CUDA {info['cuda']}"] if info.get("cuda") else []  # PyTorch's; JAX lanes do not import it
            device = f"{lane.device}: {info.get('name', '?')}" + (f" ({', '.join(known)})" if known else "")
            used_device, detail = device_evidence(message.get("evidence") or {})
        result = Result(
            status=Status(message["status"]),
            duration=float(message.get("duration", 0.0)),
            stdout=message.get("stdout", ""),
            stderr=message.get("stderr", ""),
            output_cut=bool(message.get("output_cut")),
            error=message.get("error", ""),
            warnings=tuple(message.get("warnings", ())),
            versions=lane_versions(lane),
            device=device,
            date=self.date,
            stage=message.get("stage", ""),
            detail=detail,
            value=message.get("value"),
            used_device=used_device,
        )
        if job.counterexample:
            result = judge_counterexample(job, result)
        self._record(job, result, worker.key)
        wall = float(message.get("wall", result.duration))
        group.process_s += max(0.0, wall - result.duration)
        self.new_timings[job.id] = wall

    def _record(self, job: Job, result: Result, key: str) -> None:
        self.results[job.id] = result
        group = self.stats[key]
        group.cell_s += result.duration
        if result.status == Status.PASSED:
            group.passed += 1
        else:
            group.failed += 1
        # the stored entry, when another build stored this job's result first: what every build shows
        # (a write that fails is on the cache's warnings, and the result is kept as it is)
        self.results[job.id] = self.cache.put(job.key, result, replace=self.force)

    def _failure(self, job: Job, status: Status, reason: str) -> Result:
        """The result of a job its worker could not run."""
        return Result(status=status, error=reason, versions=lane_versions(self.lanes[job.lane]), device=self.cpu, date=self.date)

    def _fail_lane(self, worker: LaneWorker, reason: str) -> None:
        jobs = self.pending.pop(worker.key, [])
        jobs += [job for job, _, _ in worker.in_flight.values()]
        worker.in_flight.clear()
        for job in jobs:
            self._record(job, self._failure(job, Status.ERROR, reason), worker.key)
        self._drop(worker)

    def _worker_died(self, worker: LaneWorker, reason: str) -> None:
        try:
            worker.process.wait(timeout=1)  # after EOF the exit status follows at once
        except subprocess.TimeoutExpired:
            pass  # alive but not answering: _drop kills it
        if worker.process.returncode is not None:
            reason += f" (exit status {worker.process.returncode})"
        tail = worker.stderr_tail()
        if tail:
            reason += f"; its last words on stderr:\n{tail}"
        for job, _, _ in list(worker.in_flight.values()):
            self._record(job, self._failure(job, Status.CRASHED, reason), worker.key)
        worker.in_flight.clear()
        self._drop(worker)
        self.restarts[worker.key] = self.restarts.get(worker.key, 0) + 1
        if self.restarts[worker.key] > 3 and self.pending.get(worker.key):
            for job in self.pending.pop(worker.key):
                self._record(job, self._failure(job, Status.ERROR, f"the lane worker kept dying; the last time: {reason}"), worker.key)

    def _drop(self, worker: LaneWorker) -> None:
        try:
            self.selector.unregister(worker.process.stdout)
        except (KeyError, ValueError):
            pass
        worker.kill()
        self.workers.pop(worker.key, None)
