"""Inside a cell process: its own session, streams and working directory, then setup, code and check
in a fresh `__main__` (in every rank for a multi-process lane), and the result file."""

from __future__ import annotations

import builtins
import importlib
import os
import signal
import socket
import sys
import tempfile
import time
import traceback
import types
import warnings

from device import device_counters, device_evidence, device_info, use_device
from processes import describe_exit, die_with_parent
from protocol import read_result, write_json

WORKER_DIR = os.path.dirname(os.path.abspath(__file__))


def enter_cell_process(workdir: str, out_w: int, err_w: int, protocol) -> None:
    os.setsid()
    die_with_parent()
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


def run_cell(job: dict, result_path: str, config: dict) -> None:
    """Run setup, code and check (in `processes` ranks if asked) and write the result file."""
    processes = int(job.get("processes", 1))
    if processes > 1:
        result = _run_ranks(job, config, processes, os.path.dirname(result_path))
    else:
        result = _run_in_namespace(job, config)
    write_json(result_path, result)
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
                write_json(os.path.join(workdir, f".rank{rank}.json"), _run_in_namespace(job, config))
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(0)
        pids[rank] = pid
    os.environ.update(RANK="0", LOCAL_RANK="0")
    results = {0: _run_in_namespace(job, config)}
    for rank, pid in pids.items():
        _, status = os.waitpid(pid, 0)
        results[rank] = read_result(os.path.join(workdir, f".rank{rank}.json")) or {
            "status": "crashed",
            "error": describe_exit(status),
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
    main_module.__dict__["__builtins__"] = builtins  # the module, as a script's __main__ has it
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
                use_device(job)
                before = device_counters()
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
            if stage == "check" and type(exc) is AssertionError and not exc.args:
                error += _compared(exc, job)  # after the failure, from the failing statement: no passing cell runs it
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
        result["device_info"] = device_info(job["device"])
        result["evidence"] = device_evidence(namespace, before)
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


def _compared(exc: AssertionError, job: dict) -> str:
    """The values a failed bare `assert` compared (`assert a == b`: a and b; `assert f(a, b)`: a and b),
    evaluated after the failure in the failing frame's still-live namespace, as pytest shows them; ''
    when the statement is not found or shows nothing more."""
    tb, frame_tb = exc.__traceback__, None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == job["abspath"]:
            frame_tb = tb
        tb = tb.tb_next
    snippet = job.get("check")
    if frame_tb is None or not snippet:
        return ""
    import ast

    line = frame_tb.tb_lineno
    try:
        tree = ast.parse("\n" * (snippet["line"] - 1) + snippet["text"])
    except SyntaxError:
        return ""
    found = [node for node in ast.walk(tree) if isinstance(node, ast.Assert) and node.lineno <= line <= (node.end_lineno or node.lineno)]
    if not found:
        return ""
    test = found[0].test
    parts = [test.left, *test.comparators] if isinstance(test, ast.Compare) else [*test.args, *(k.value for k in test.keywords)] if isinstance(test, ast.Call) else []
    shown = []
    frame = frame_tb.tb_frame
    for part in parts:
        if isinstance(part, ast.Constant):
            continue
        try:
            value = repr(eval(compile(ast.Expression(part), "<assert values>", "eval"), frame.f_globals, frame.f_locals))  # noqa: S307 - the cell's own expression
        except Exception as error:  # noqa: BLE001 - an operand that cannot be evaluated again says why
            value = f"<could not be evaluated again: {type(error).__name__}: {error}>"
        text = ast.unparse(part)
        shown.append(f"  {text[:120]} = {value if len(value) <= 400 else value[:400] + '...'}")
    return ("The assertion compared (evaluated again after it failed):\n" + "\n".join(shown) + "\n") if shown else ""


def _trim(te: traceback.TracebackException) -> None:
    seen = set()
    while te is not None and id(te) not in seen:
        seen.add(id(te))
        te.stack = traceback.StackSummary.from_list([f for f in te.stack if os.path.dirname(os.path.abspath(f.filename)) != WORKER_DIR])
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
