"""A lane worker: imports a framework once, then runs each cell in a process forked for it alone.

Run as a script (`python -I generator/verify/worker.py LANE_JSON`); it uses the standard library only, so
that a cell can import nothing of the generator. It speaks JSON lines: one "ready" message after its
imports, then one "result" for each "run" it reads on stdin. It is one file, over the 400 lines a
module of the package keeps to, for that reason: a script of the standard library cannot import
helpers from the package it belongs to.

Why fork per cell: the parent imports the framework but never starts its runtime (no thread pools,
no XLA client, no TF context), so a fork is cheap and safe, and each cell starts from the same clean
state. Whatever a cell does to the process (global framework config, cwd, sys.path, builtins,
threads, os._exit, a segfault) dies with its process. The worker is a child subreaper, so processes
a cell leaves behind are found and killed too.
"""

from __future__ import annotations

import ctypes
import gc
import importlib
import importlib.util
import json
import os
import select
import signal
import socket
import sys
import tempfile
import time
import traceback
import types
import warnings

OUTPUT_CAP = 64 * 1024  # bytes kept per stream: the first and the last half of it
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
_libc = ctypes.CDLL(None, use_errno=True)
_HERE = os.path.abspath(__file__)


def main(argv: list[str]) -> int:
    if argv[1] == "--cell":
        return spawned_cell_main(argv[2])
    config = json.loads(argv[1])
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    _libc.prctl(PR_SET_CHILD_SUBREAPER, 1)
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # stray prints during imports go nowhere
    started = time.perf_counter()
    try:
        _import_lane(config)
    except BaseException as exc:  # noqa: BLE001 - report any import failure
        _send(protocol, {"type": "ready", "error": f"{type(exc).__name__}: {exc}", "import_s": 0.0})
        return 1
    import_s = time.perf_counter() - started
    # Everything imported so far is shared by every cell process. A garbage collection in a cell
    # would otherwise walk all of it, writing to each object's header, and so copy (on write)
    # every page the parent's objects live on: 25 ms a cell with torch, 150-400 ms a full one.
    gc.collect()
    gc.freeze()
    versions = {}
    for name in config["imports"]:
        module = sys.modules.get(name.split(".")[0])
        version = getattr(module, "__version__", None)
        if isinstance(version, str):
            versions[name.split(".")[0]] = version
    _send(protocol, {"type": "ready", "error": None, "import_s": import_s, "versions": versions})
    Worker(config, protocol).loop()
    _kill_orphans(set())  # what the last cells left behind, before they are re-parented to init
    return 0


def _import_lane(config: dict) -> None:
    """The lane's imports (the optional ones where installed), then its prelude."""
    for name in config["imports"]:
        importlib.import_module(name)
    for name in config.get("optional_imports", ()):
        try:  # a dotted name imports its parents to be found: a missing parent raises
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:
            found = False
        if found:
            importlib.import_module(name)
    if config.get("prelude"):
        exec(compile(config["prelude"], "<lane prelude>", "exec", dont_inherit=True), {"__name__": "__lane__"})
    if "numpy" in sys.modules:  # every cell seeds NumPy's generator (_reseed): 17 ms a cell to import it there
        importlib.import_module("numpy.random")


def _send(stream, message: dict) -> None:
    stream.write(json.dumps(message) + "\n")
    stream.flush()


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


class Capture:
    """Keeps the head and the tail of a stream, and how much was dropped in between."""

    def __init__(self):
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = OUTPUT_CAP // 2 - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > OUTPUT_CAP:
                del self.tail[: len(self.tail) - OUTPUT_CAP // 2]

    @property
    def cut(self) -> bool:
        return self.total > len(self.head) + len(self.tail)

    def text(self) -> str:
        if self.cut:
            dropped = self.total - len(self.head) - len(self.tail)
            middle = f"\n[... {dropped} bytes of output cut ...]\n".encode()
            data = bytes(self.head) + middle + bytes(self.tail)
        else:
            data = bytes(self.head) + bytes(self.tail)
        return data.decode("utf-8", errors="replace")


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
            _kill_group(active.pid)
        _kill_orphans(set())
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
                _send(self.protocol, {"type": "note", "text": f"{self.spawn_reason}: forking a cell from it is unsafe, so each cell of this worker starts in a fresh interpreter (slower, correct)"})
        started = time.perf_counter()  # the fork itself counts: 6-12 ms of page tables for a framework
        if self.spawn_reason:
            pid = self._spawn(job, workdir, out_w, err_w)
        else:
            pid = os.fork()
        if pid == 0:  # the cell process
            try:
                os.close(out_r)
                os.close(err_r)
                _enter_cell_process(workdir, out_w, err_w, self.protocol)
                _run_cell(job, result_path, self.config)
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

        _write_json(os.path.join(workdir, ".job.json"), {"job": job, "config": self.config})
        process = subprocess.Popen(
            [sys.executable, "-I", _HERE, "--cell", workdir],
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
                active.detail = f"the cell ran past its timeout of {active.job['timeout']:g} s and was killed"
                _kill_group(pid)
        if self.memory_cap and now - self.last_memory_check > 0.1 and self.active:
            self.last_memory_check = now
            usage = _rss_by_group()
            for pid, active in self.active.items():
                rss = usage.get(pid, 0)
                if active.status is None and rss > self.memory_cap:
                    active.status = "crashed"
                    active.detail = (
                        f"the cell used {rss / 2**20:.0f} MiB, more than the worker's memory cap of "
                        f"{self.memory_cap / 2**20:.0f} MiB, and was killed"
                    )
                    _kill_group(pid)
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
        _kill_group(active.pid)
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
        result = _read_result(os.path.join(active.workdir, ".result.json"))
        if active.status is not None:
            result = {"status": active.status, "error": active.detail, "duration": wall}
        out, err = active.streams[active.out_fd], active.streams[active.err_fd]
        if result is None and active.status is None:
            # what the process last wrote to stderr is often the reason (a native abort, a traceback)
            said = err.text().strip()[-1500:]
            result = {"status": "crashed", "error": _describe_exit(active.exit_status) + (f"; its last output:\n{said}" if said else ""), "duration": wall}
        result.update(
            type="result",
            id=active.job["id"],
            stdout=out.text(),
            stderr=err.text(),
            output_cut=out.cut or err.cut,
            wall=wall,
        )
        _send(self.protocol, result)
        _remove_tree(active.workdir)
        try:
            os.unlink(active.workdir + ".py")  # the cell's source (see _write_source)
        except OSError:
            pass
        _kill_orphans(set(self.active))


def fork_unsafe_reason() -> str:
    """Why forking this process now would be unsafe ('' when it is safe): threads (a fork copies
    only the calling one, with whatever locks the others held) or an initialised GPU runtime."""
    try:
        threads = len(os.listdir("/proc/self/task"))
    except OSError:
        threads = 1
    if threads > 1:
        return f"the lane worker holds {threads} threads"
    torch = sys.modules.get("torch")
    if torch is not None and getattr(torch, "cuda", None) is not None and torch.cuda.is_initialized():
        return "the lane worker has initialised CUDA (torch)"
    bridge = sys.modules.get("jax._src.xla_bridge")
    if bridge is not None and getattr(bridge, "_backends", None):
        return "the lane worker has started a JAX backend"
    return ""


def spawned_cell_main(workdir: str) -> int:
    """A cell started by spawn: import the lane here, then run the cell as a forked one would."""
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    with open(os.path.join(workdir, ".job.json"), encoding="utf-8") as handle:
        data = json.load(handle)
    job, config = data["job"], data["config"]
    result_path = os.path.join(workdir, ".result.json")
    try:
        _import_lane(config)
    except BaseException as exc:  # noqa: BLE001
        _write_json(result_path, {"status": "error", "error": f"the lane could not start in the spawned cell process: {type(exc).__name__}: {exc}", "duration": 0.0, "warnings": []})
        return 0
    os.chdir(workdir)
    os.environ["TMPDIR"] = workdir
    tempfile.tempdir = workdir
    sys.stdout = open(1, "w", buffering=1, closefd=False, errors="backslashreplace")
    sys.stderr = open(2, "w", buffering=1, closefd=False, errors="backslashreplace")
    sys.__stdout__, sys.__stderr__ = sys.stdout, sys.stderr
    try:
        _run_cell(job, result_path, config)
    finally:
        os._exit(0)


def _read_result(path: str):
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def _describe_exit(status) -> str:
    if status is None:
        return "the cell process vanished"
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"the cell process was killed by {name}"
    code = os.WEXITSTATUS(status)
    return f"the cell process exited with status {code} before the cell finished (os._exit or a native exit)"


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _proc_stats(pids=None):
    """Yield (pid, ppid, pgrp, rss_pages) for these processes (default: every process); a process
    that has gone is left out."""
    if pids is None:
        pids = (int(name) for name in os.listdir("/proc") if name.isdigit())
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        yield pid, int(fields[1]), int(fields[2]), int(fields[21])


def _rss_by_group() -> dict[int, int]:
    page = os.sysconf("SC_PAGE_SIZE")
    usage: dict[int, int] = {}
    for _, _, pgrp, rss in _proc_stats():
        usage[pgrp] = usage.get(pgrp, 0) + rss * page
    return usage


def _kill_orphans(keep: set[int]) -> None:
    """Kill processes a finished cell left behind: they were re-parented to this subreaper."""
    for pid, pgrp in _children():
        if pid not in keep and pgrp not in keep:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _children():
    """Yield (pid, pgrp) of this process's children: from /proc/self/task/*/children (a read per
    thread, 3 ms a cell less than a scan of every process), or by that scan where the kernel lacks it."""
    me = os.getpid()
    try:
        pids = set()
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/children", "rb") as handle:
                pids.update(int(pid) for pid in handle.read().split())
    except OSError:
        yield from ((pid, pgrp) for pid, ppid, pgrp, _ in _proc_stats() if ppid == me)
        return
    yield from ((pid, pgrp) for pid, _, pgrp, _ in _proc_stats(pids))


def _remove_tree(path: str) -> None:
    for root, dirs, files in os.walk(path, topdown=False):
        for name in files:
            try:
                os.unlink(os.path.join(root, name))
            except OSError:
                pass
        for name in dirs:
            full = os.path.join(root, name)
            try:
                if os.path.islink(full):
                    os.unlink(full)
                else:
                    os.rmdir(full)
            except OSError:
                pass
    try:
        os.rmdir(path)
    except OSError:
        pass


# ---------------------------------------------------------------------------------------------
# Inside the cell process


def _enter_cell_process(workdir: str, out_w: int, err_w: int, protocol) -> None:
    os.setsid()
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)
    protocol_fd = protocol.fileno()
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(out_w, 1)
    os.dup2(err_w, 2)
    for fd in (devnull, out_w, err_w, protocol_fd):
        try:
            os.close(fd)
        except OSError:
            pass
    sys.stdin = open(0, closefd=False)
    sys.stdout = open(1, "w", buffering=1, closefd=False, errors="backslashreplace")
    sys.stderr = open(2, "w", buffering=1, closefd=False, errors="backslashreplace")
    sys.__stdout__, sys.__stderr__ = sys.stdout, sys.stderr
    os.chdir(workdir)
    os.environ["TMPDIR"] = workdir
    tempfile.tempdir = workdir


def _run_cell(job: dict, result_path: str, config: dict) -> None:
    """Run setup, code and check (in `processes` ranks if asked) and write the result file."""
    processes = int(job.get("processes", 1))
    if processes > 1:
        result = _run_ranks(job, config, processes, os.path.dirname(result_path))
    else:
        result = _run_in_namespace(job, config)
    _write_json(result_path, result)
    sys.stdout.flush()
    sys.stderr.flush()


def _run_ranks(job: dict, config: dict, processes: int, workdir: str) -> dict:
    """Start the cell as torchrun would: one process per rank, with the torchrun environment."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    os.environ.update(
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        WORLD_SIZE=str(processes),
        LOCAL_WORLD_SIZE=str(processes),
        GROUP_RANK="0",
        ROLE_RANK="0",
        ROLE_WORLD_SIZE=str(processes),
    )
    pids = {}
    for rank in range(1, processes):
        pid = os.fork()
        if pid == 0:
            try:
                os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank))
                _write_json(os.path.join(workdir, f".rank{rank}.json"), _run_in_namespace(job, config))
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(0)
        pids[rank] = pid
    os.environ.update(RANK="0", LOCAL_RANK="0")
    results = {0: _run_in_namespace(job, config)}
    for rank, pid in pids.items():
        _, status = os.waitpid(pid, 0)
        results[rank] = _read_result(os.path.join(workdir, f".rank{rank}.json")) or {
            "status": "crashed",
            "error": _describe_exit(status),
            "duration": 0.0,
            "warnings": [],
        }
    merged = dict(results[0])
    merged["duration"] = max(r.get("duration", 0.0) for r in results.values())
    merged["warnings"] = _dedupe([w for r in results.values() for w in r.get("warnings", [])])
    for rank in sorted(results):
        if results[rank]["status"] != "passed":
            merged["status"] = results[rank]["status"]
            merged["error"] = f"rank {rank} of {processes}: {results[rank].get('error', '')}"
            break
    return merged


def _run_in_namespace(job: dict, config: dict) -> dict:
    main_module = types.ModuleType("__main__")
    main_module.__dict__["__builtins__"] = __builtins__
    sys.modules["__main__"] = main_module
    namespace = main_module.__dict__
    _reseed()
    status, error, stage, value = "passed", "", "", None
    on_gpu = job.get("device", "cpu") != "cpu"
    started = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if on_gpu:
                _use_device(job)
                before = _device_counters()
            job = {**job, "abspath": _write_source(job)}
            for stage in ("setup", "code", "check"):
                snippet = job.get(stage)
                if snippet:
                    source = "\n" * (snippet["line"] - 1) + snippet["text"]
                    # dont_inherit: this module's `from __future__ import annotations` must not
                    # reach the cell (annotations a reader's Python evaluates would go unchecked)
                    exec(compile(source, job["abspath"], "exec", dont_inherit=True), namespace)
            stage = "expose"
            if job.get("expose"):
                value = _exposed_value(namespace, job["expose"])
        except BaseException as exc:  # noqa: BLE001 - SystemExit and KeyboardInterrupt too
            status = "failed"
            error = _format_exception(exc, job)
    duration = time.perf_counter() - started
    result = {
        "status": status,
        "error": error,
        "stage": stage if status != "passed" else "",
        "duration": duration,
        "warnings": _dedupe([_warning(w, job) for w in caught]),
    }
    if value is not None:
        result["value"] = value
    if on_gpu:
        result["device_info"] = _device_info(job["device"])
        result["evidence"] = _device_evidence(namespace, before)
    return result


def _write_source(job: dict) -> str:
    """Write the lines this job runs, at their YAML line numbers, to a Python file of their own,
    and return its path: cells are compiled under it. Whatever reads a cell's source by file name
    (tracebacks, inspect for tf.function's AutoGraph, TorchDynamo's tokenizer) then sees exactly
    the code that runs, as valid Python, never the YAML file (which is not Python, and may have
    been edited since the content was loaded). Errors and warnings name the YAML file again."""
    lines: list[str] = []
    for stage in ("setup", "code", "check"):
        snippet = job.get(stage)
        if not snippet:
            continue
        start = snippet["line"] - 1
        text = snippet["text"].splitlines(keepends=True)
        if len(lines) < start + len(text):
            lines.extend("\n" for _ in range(start + len(text) - len(lines)))
        lines[start : start + len(text)] = [line if line.endswith("\n") else line + "\n" for line in text]
    path = os.path.join(os.path.dirname(os.getcwd()), os.path.basename(os.getcwd()) + ".py")
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.writelines(lines)
    os.replace(tmp, path)
    return path


VALUE_CAP = 65536  # elements: an equivalence row compares a result, not a data set


def _exposed_value(namespace: dict, name: str) -> dict:
    """The value an equivalence row compares, as a plain record: shape, dtype and the numbers."""
    if name not in namespace:
        raise NameError(f"the row compares '{name}' across columns, but this cell left no '{name}'")
    numpy = importlib.import_module("numpy")
    value = namespace[name]
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        value = value.float() if value.dtype == torch.bfloat16 else value
        array = value.numpy()
    else:
        try:
            array = numpy.asarray(value)
        except Exception:  # noqa: BLE001 - a backend tensor NumPy cannot read directly
            array = numpy.asarray(importlib.import_module("keras").ops.convert_to_numpy(value))
    if array.dtype == object or not (numpy.issubdtype(array.dtype, numpy.number) or array.dtype == bool):
        raise TypeError(f"'{name}' must be numeric to be compared across columns, not {array.dtype}")
    if numpy.iscomplexobj(array):
        raise TypeError(f"'{name}' is complex: expose its real and imaginary parts stacked instead")
    if array.size > VALUE_CAP:
        raise ValueError(f"'{name}' has {array.size} elements, more than {VALUE_CAP}: expose a smaller summary")
    return {"shape": list(array.shape), "dtype": str(array.dtype), "data": array.astype("float64").ravel().tolist()}


def _reseed() -> None:
    import random

    random.seed(0)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(0)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(0)


def _format_exception(exc: BaseException, job: dict) -> str:
    te = traceback.TracebackException(type(exc), exc, exc.__traceback__)
    _trim(te)
    text = "".join(te.format())
    if isinstance(exc, SystemExit):
        text += "(a cell may not exit the interpreter: SystemExit is reported as a failure)\n"
    if isinstance(exc, KeyboardInterrupt):
        text += "(KeyboardInterrupt raised inside the cell)\n"
    return text.replace(job["abspath"], job["path"])


def _trim(te: traceback.TracebackException) -> None:
    seen = set()
    while te is not None and id(te) not in seen:
        seen.add(id(te))
        te.stack = traceback.StackSummary.from_list([f for f in te.stack if f.filename != _HERE])
        te = te.__cause__ or te.__context__


def _warning(caught, job: dict) -> dict:
    filename = str(caught.filename).replace(job["abspath"], job["path"])
    return {
        "category": caught.category.__name__,
        "message": str(caught.message)[:2000],
        "where": f"{filename}:{caught.lineno}",
    }


def _dedupe(items: list[dict]) -> list[dict]:
    seen = {}
    for item in items:
        key = (item["category"], item["message"], item["where"])
        if key in seen:
            seen[key]["count"] = seen[key].get("count", 1) + 1
        else:
            seen[key] = dict(item)
    return list(seen.values())


def _use_device(job: dict) -> None:
    """Make the GPU PyTorch's default device in lanes that ask for it (the PyTorch lanes, whose
    snippets make tensors without naming a device). Never in the Keras lanes: Keras places its own
    tensors, and a default device there breaks what a Keras user runs (the CPU generator of the
    DataLoader that shuffles `fit`'s batches)."""
    torch = sys.modules.get("torch")
    if torch is not None and job.get("default_device"):
        torch.set_default_device(job["default_device"])


def _device_counters() -> dict:
    """The runtime's own counters of device work, read before the cell runs."""
    counters = {}
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        counters["torch_allocations"] = int(torch.cuda.memory_stats().get("allocation.all.allocated", 0))
    return counters


def _device_evidence(namespace: dict, before: dict) -> dict:
    """How the cell showed it used the GPU, from the runtimes rather than from what it left behind:
    the CUDA caching allocator's allocations during the cell (PyTorch), the live arrays and the
    namespace's arrays on a GPU (JAX)."""
    evidence = {}
    torch = sys.modules.get("torch")
    if torch is not None and "torch_allocations" in before:
        evidence["torch_allocations"] = int(torch.cuda.memory_stats().get("allocation.all.allocated", 0)) - before["torch_allocations"]
    jax = sys.modules.get("jax")
    if jax is not None:
        try:
            live = [a for a in jax.live_arrays() if any(d.platform in ("gpu", "cuda") for d in a.devices())]
            evidence["jax_live_arrays"] = len(live)
        except Exception:  # noqa: BLE001 - no backend: no evidence
            pass
    evidence["namespace_arrays"] = sum(
        1 for value in list(namespace.values()) for placement in _placements(value) if placement == "gpu"
    )
    return evidence


def _placements(value):
    torch = sys.modules.get("torch")
    if torch is not None:
        if isinstance(value, torch.Tensor):
            yield "gpu" if value.device.type == "cuda" else value.device.type
            return
        if isinstance(value, torch.nn.Module):
            for parameter in value.parameters():
                yield "gpu" if parameter.device.type == "cuda" else parameter.device.type
            return
    jax = sys.modules.get("jax")
    if jax is not None and isinstance(value, jax.Array):
        if value.is_deleted():  # donated to a computation: it has no buffer, and no device to ask
            return
        for dev in value.devices():
            yield "gpu" if dev.platform in ("gpu", "cuda") else dev.platform


def _device_info(device: str) -> dict:
    info = {}
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        info["name"] = torch.cuda.get_device_name(0)
        info["cuda"] = torch.version.cuda
    jax = sys.modules.get("jax")
    if jax is not None and "name" not in info:
        try:
            info["name"] = jax.devices()[0].device_kind
        except Exception:  # noqa: BLE001
            pass
    try:
        with open("/proc/driver/nvidia/version", encoding="utf-8") as handle:
            driver = driver_version(handle.readline())
        if driver:
            info["driver"] = driver
    except OSError:
        pass
    return info


def driver_version(line: str) -> str:
    """The driver version in the first line of /proc/driver/nvidia/version, e.g.
    'NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build ...' -> '580.95.05'."""
    import re

    match = re.search(r"\b(\d{3,}\.\d+(?:\.\d+)?)\b", line)
    return match.group(1) if match else ""


def _write_json(path: str, data: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(data, handle)
    os.replace(tmp, path)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
