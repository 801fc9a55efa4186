"""A lane worker process as the runner sees it: started with the lane's minimal environment, fed
jobs as JSON lines, read as JSON lines, killed with its whole process group. What runs inside it is
the worker/ directory (`python -I worker/`)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from generator.lanes import Lane, base_env
from generator.model import Job
from generator.verify import sandbox as sandboxes

WORKER_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker")  # a directory python runs


class LaneWorker:
    """One lane worker process and the jobs it is running."""

    def __init__(self, key: str, lane: Lane, config: dict, env: dict, scratch: str, sandbox: sandboxes.Sandbox | None = None):
        self.key = key
        self.lane = lane
        self.in_flight: dict[str, tuple[Job, float, int]] = {}  # job id -> (job, started, slots)
        self.ready = False
        self.buffer = b""
        self.log_path = os.path.join(scratch, f"worker-{os.getpid()}-{id(self)}.log")
        log = open(self.log_path, "wb")
        argv = [sys.executable, "-I", WORKER_SCRIPT, json.dumps(config)]
        if sandbox is not None:  # writable: the cells' scratch folder and the lane's home (compile caches)
            devices = sandboxes.gpu_devices() if lane.device != "cpu" else ()
            argv = sandbox.wrap(argv, writable=(scratch, env["HOME"]), hidden=(sandboxes.REPOSITORY_GIT,), devices=devices)
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            env=env,
            cwd=scratch,
            start_new_session=True,
        )
        log.close()
        self.started = time.perf_counter()
        self.versions: dict = {}

    def stderr_tail(self, limit: int = 2000) -> str:
        """The end of what the worker wrote to stderr (its own, not its cells'): why it died."""
        try:
            with open(self.log_path, "rb") as handle:
                handle.seek(max(0, os.fstat(handle.fileno()).st_size - limit))
                return handle.read().decode("utf-8", "replace").strip()
        except OSError:
            return ""

    def send(self, message: dict) -> None:
        self.process.stdin.write((json.dumps(message) + "\n").encode())
        self.process.stdin.flush()

    def messages(self):
        data = os.read(self.process.stdout.fileno(), 1 << 20)
        if not data:
            raise EOFError
        self.buffer += data
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            yield json.loads(line)

    def kill(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            try:
                stream.close()
            except OSError:
                pass


def worker_env(lane: Lane, home: str, scratch: str) -> dict:
    """The minimal environment a worker and its cells see: nothing of the parent's secrets."""
    venv_bin = os.path.dirname(sys.executable)
    return {
        "PATH": f"{venv_bin}:/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TMPDIR": scratch,
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        # compile caches survive between cells and builds (lanes.base_env says how they are keyed)
        "TORCHINDUCTOR_CACHE_DIR": os.path.join(home, "torchinductor"),
        "JAX_COMPILATION_CACHE_DIR": os.path.join(home, "jax-cache"),
        # pyarrow's bundled jemalloc starts a purging thread at import ("jemalloc_bg_thd"), and
        # Keras imports pandas, which imports pyarrow, wherever they are installed: a worker with a
        # thread cannot fork its cells, and every cell then starts a fresh interpreter (the cold
        # content build at under half its speed). Without the thread jemalloc purges on its own
        # allocation path; no value a cell computes changes, so this is the runner's, not the
        # lane's, and no identity follows it.
        "JE_ARROW_MALLOC_CONF": "background_thread:false",
        **base_env(lane),
    }
