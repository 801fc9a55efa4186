"""The worker's loop: reads jobs, forks (or spawns) a process per cell, enforces timeouts and the
memory cap, and sends each cell's result."""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import tempfile
import time
import traceback

from capture import Capture
from cell import enter_cell_process, run_cell
from processes import describe_exit, fork_unsafe_reason, kill_group, kill_orphans, remove_tree, rss_by_group
from protocol import read_result, send, write_json
from sample import where

WORKER_DIR = os.path.dirname(os.path.abspath(__file__))


class Active:
    """A cell process in flight and what it has written so far."""

    def __init__(self, job, pid, out_fd, err_fd, workdir, started):
        self.job = job
        self.pid = pid
        self.streams = {out_fd: Capture(), err_fd: Capture()}
        self.out_fd, self.err_fd = out_fd, err_fd
        self.workdir = workdir
        self.started = started
        self.deadline = started + float(job["timeout"])
        self.status = None  # set when the worker stops the cell
        self.detail = ""
        self.exit_status = None


class Worker:
    def __init__(self, config: dict, protocol):
        self.config = config
        self.protocol = protocol
        self.active: dict[int, Active] = {}
        self.inbox = b""
        self.closing = False
        self.memory_cap = int(config.get("memory_cap", 0))
        self.scratch = config["scratch"]
        self.last_memory_check = 0.0
        self.spawn_reason = ""  # set once forking has become unsafe: cells are then spawned
        self.spawned: dict[int, object] = {}
        signal.signal(signal.SIGTERM, self._terminate)

    def _terminate(self, *_):
        self.closing = True
        for active in list(self.active.values()):
            kill_group(active.pid)
        kill_orphans(set())
        os._exit(0)

    def loop(self) -> None:
        while not (self.closing and not self.active):
            fds = [] if self.closing else [0]
            for active in self.active.values():
                fds.extend(active.streams)
            try:
                readable, _, _ = select.select(fds, [], [], 0.02)
            except InterruptedError:
                continue
            for fd in readable:
                if fd == 0:
                    self._read_jobs()
                else:
                    self._read_output(fd)
            self._poll()

    def _read_jobs(self) -> None:
        data = os.read(0, 65536)
        if not data:
            self.closing = True
            return
        self.inbox += data
        while b"\n" in self.inbox:
            line, self.inbox = self.inbox.split(b"\n", 1)
            message = json.loads(line)
            if message.get("type") == "exit":
                self.closing = True
            elif message.get("type") == "run":
                self._start(message)

    def _read_output(self, fd: int) -> None:
        for active in self.active.values():
            if fd in active.streams:
                try:
                    data = os.read(fd, 65536)
                except OSError:
                    data = b""
                if data:
                    active.streams[fd].add(data)
                return

    def _start(self, job: dict) -> None:
        workdir = tempfile.mkdtemp(prefix="cell-", dir=self.scratch)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        result_path = os.path.join(workdir, ".result.json")
        sys.stdout.flush()
        if not self.spawn_reason:
            self.spawn_reason = fork_unsafe_reason()
            if self.spawn_reason:
                send(self.protocol, {"type": "note", "text": f"{self.spawn_reason}: forking a cell from it is unsafe, so each cell of this worker starts in a fresh interpreter (slower, correct)"})
        started = time.perf_counter()  # the fork itself counts: 6-12 ms of page tables for a framework
        if self.spawn_reason:
            pid = self._spawn(job, workdir, out_w, err_w)
        else:
            pid = os.fork()
        if pid == 0:  # the cell process
            try:
                os.close(out_r)
                os.close(err_r)
                enter_cell_process(workdir, out_w, err_w, self.protocol)
                run_cell(job, result_path, self.config)
            except BaseException:  # noqa: BLE001 - the runner's own failure, outside the cell: say where
                traceback.print_exc()
            finally:
                os._exit(70)
        os.close(out_w)
        os.close(err_w)
        for fd in (out_r, err_r):
            os.set_blocking(fd, False)
        self.active[pid] = Active(job, pid, out_r, err_r, workdir, started)

    def _spawn(self, job: dict, workdir: str, out_w: int, err_w: int) -> int:
        """Start the cell in a fresh interpreter that imports the lane itself: no fork."""
        import subprocess

        write_json(os.path.join(workdir, ".job.json"), {"job": job, "config": self.config})
        process = subprocess.Popen(
            [sys.executable, "-I", WORKER_DIR, "--cell", workdir],
            stdin=subprocess.DEVNULL,
            stdout=out_w,
            stderr=err_w,
            cwd=workdir,
            start_new_session=True,
        )
        self.spawned[process.pid] = process  # kept so that it is not reaped behind our back
        return process.pid

    def _poll(self) -> None:
        now = time.perf_counter()
        for pid, active in list(self.active.items()):
            if active.status is None and now > active.deadline:
                active.status = "timeout"
                # where it was, read from outside before the kill (sample.py): nothing in the cell changes
                at, stack = where(pid, active.workdir + ".py", active.job["path"], WORKER_DIR)
                active.detail = (f"{at + ': ' if at else ''}the cell ran past its timeout of {active.job['timeout']:g} s (the row's `timeout:`) "
                                 f"and was killed{' here' if at else ''}\n{stack}")  # fmt: skip
                kill_group(pid)
        if self.memory_cap and now - self.last_memory_check > 0.1 and self.active:
            self.last_memory_check = now
            usage = rss_by_group()
            for pid, active in self.active.items():
                rss = usage.get(pid, 0)
                if active.status is None and rss > self.memory_cap:
                    active.status = "crashed"
                    active.detail = (
                        f"the cell used {rss / 2**20:.0f} MiB, more than the worker's memory cap of "
                        f"{self.memory_cap / 2**20:.0f} MiB, and was killed"
                    )
                    kill_group(pid)
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            active = self.active.pop(pid, None)
            process = self.spawned.pop(pid, None)
            if process is not None:
                process.returncode = os.waitstatus_to_exitcode(status)
            if active is not None:
                active.exit_status = status
                self._finish(active)

    def _finish(self, active: Active) -> None:
        kill_group(active.pid)
        for fd in active.streams:
            while True:
                try:
                    data = os.read(fd, 65536)
                except (BlockingIOError, OSError):
                    break
                if not data:
                    break
                active.streams[fd].add(data)
            os.close(fd)
        wall = time.perf_counter() - active.started
        result = read_result(os.path.join(active.workdir, ".result.json"))
        if active.status is not None:
            result = {"status": active.status, "error": active.detail, "duration": wall}
        out, err = active.streams[active.out_fd], active.streams[active.err_fd]
        if result is None and active.status is None:
            # what the process last wrote to stderr is often the reason (a native abort, a traceback)
            said = err.text().strip()[-1500:]
            result = {"status": "crashed", "error": describe_exit(active.exit_status) + (f"; its last output:\n{said}" if said else ""), "duration": wall}
        result.update(
            type="result",
            id=active.job["id"],
            stdout=out.text(),
            stderr=err.text(),
            output_cut=out.cut or err.cut,
            wall=wall,
        )
        send(self.protocol, result)
        remove_tree(active.workdir)
        try:
            os.unlink(active.workdir + ".py")  # the cell's source (see _write_source)
        except OSError:
            pass
        kill_orphans(set(self.active))
