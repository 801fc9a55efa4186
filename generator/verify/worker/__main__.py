"""A lane worker: imports a framework once, then runs each cell in a process forked for it alone.

Run as a directory (`python -I generator/verify/worker LANE_JSON`): `python` runs this `__main__.py`
with the directory first on `sys.path`, so its modules import each other by their plain names, and
nothing of the generator is importable from a cell. Standard library only. It speaks JSON lines: one
"ready" message after its imports, then one "result" for each "run" it reads on stdin.

The parts: lane.py (the lane's imports), loop.py (jobs in, a process per cell, results out),
cell.py (inside a cell process), capture.py (its output), processes.py (reaping, killing, memory),
device.py (GPU evidence), protocol.py (JSON lines and files).

Why fork per cell: the parent imports the framework but never starts its runtime (no thread pools,
no XLA client, no TF context), so a fork is cheap and safe, and each cell starts from the same clean
state. Whatever a cell does to the process (global framework config, cwd, sys.path, builtins,
threads, os._exit, a segfault) dies with its process. The worker is a child subreaper, so processes
a cell leaves behind are found and killed too.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import tempfile
import time

from cell import run_cell
from lane import import_lane, imported_versions
from loop import Worker
from processes import become_subreaper, die_with_parent, kill_orphans
from protocol import send, write_json


def main(argv: list[str]) -> int:
    if argv[1] == "--cell":
        return spawned_cell_main(argv[2])
    config = json.loads(argv[1])
    die_with_parent()
    become_subreaper()
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # stray prints during imports go nowhere
    started = time.perf_counter()
    try:
        import_lane(config)
    except BaseException as exc:  # noqa: BLE001 - report any import failure
        send(protocol, {"type": "ready", "error": f"{type(exc).__name__}: {exc}", "import_s": 0.0})
        return 1
    import_s = time.perf_counter() - started
    # Everything imported so far is shared by every cell process. A garbage collection in a cell
    # would otherwise walk all of it, writing to each object's header, and so copy (on write)
    # every page the parent's objects live on: 25 ms a cell with torch, 150-400 ms a full one.
    gc.collect()
    gc.freeze()
    versions = imported_versions(config)
    send(protocol, {"type": "ready", "error": None, "import_s": import_s, "versions": versions})
    Worker(config, protocol).loop()
    kill_orphans(set())  # what the last cells left behind, before they are re-parented to init
    return 0


def spawned_cell_main(workdir: str) -> int:
    """A cell started by spawn: import the lane here, then run the cell as a forked one would."""
    die_with_parent()
    with open(os.path.join(workdir, ".job.json"), encoding="utf-8") as handle:
        data = json.load(handle)
    job, config = data["job"], data["config"]
    result_path = os.path.join(workdir, ".result.json")
    try:
        import_lane(config)
    except BaseException as exc:  # noqa: BLE001
        write_json(result_path, {"status": "error", "error": f"the lane could not start in the spawned cell process: {type(exc).__name__}: {exc}", "duration": 0.0, "warnings": []})
        return 0
    os.chdir(workdir)
    os.environ["TMPDIR"] = workdir
    tempfile.tempdir = workdir
    sys.stdout = open(1, "w", buffering=1, closefd=False, errors="backslashreplace")
    sys.stderr = open(2, "w", buffering=1, closefd=False, errors="backslashreplace")
    sys.__stdout__, sys.__stderr__ = sys.stdout, sys.stderr
    try:
        run_cell(job, result_path, config)
    finally:
        os._exit(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
