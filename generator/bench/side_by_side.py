"""Ours and the shared-kernel peer verifying the same cells at the same time, one core each.

`make enginebench` first runs the two engines in turn on every core. This machine's speed drifts
between the halves of such a run (the same code measured an hour apart: ours / peer 1.66, then
2.12), and whatever drift falls on one half only goes into the ratio. Here both engines start
together, each pinned to a core of its own (their lane workers, cell processes and kernels inherit
the pin), on the single-process cells both can run, each with cold caches of its own. A slowdown of
the machine now falls on both, and the ratio of the two walls measures the engines.

Run as `python -m generator.bench.side_by_side ENGINE CONTENT CPU OUT` for one engine; `measure`
starts the two and reads what they wrote.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ENGINES = ("ours", "peer")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def measure(content_dir: str) -> dict | None:
    """Both engines at once, each pinned to one core; None where fewer than two cores are ours."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return None
    folder = tempfile.mkdtemp(prefix="mlsheets-side-by-side-")
    try:
        outputs = {engine: os.path.join(folder, f"{engine}.json") for engine in ENGINES}
        processes = [
            subprocess.Popen([sys.executable, "-m", "generator.bench.side_by_side", engine, content_dir, str(cpu), outputs[engine]], cwd=ROOT)
            for engine, cpu in zip(ENGINES, cpus[:2], strict=True)
        ]
        codes = [process.wait() for process in processes]
        if any(codes):
            raise RuntimeError(f"side-by-side run failed: exit codes {dict(zip(ENGINES, codes, strict=True))}")
        results = {}
        for engine, path in outputs.items():
            with open(path, encoding="utf-8") as handle:
                results[engine] = json.load(handle)
        return results
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run_one(engine: str, content_dir: str, cpu: int) -> dict:
    """One engine, cold, on core `cpu` alone: its wall, CPU time, verdicts and seconds in cells by worker."""
    from generator.bench.peer import run_peer, tally
    from generator.lanes import LANES
    from generator.load import content
    from generator.verify.cache import Cache
    from generator.verify.runner import run_jobs
    from generator.verify.verification import plan

    os.sched_setaffinity(0, {cpu})
    jobs = [job for job in plan(content.load(content_dir)) if not job.missing and LANES[job.lane].processes == 1]
    started, cpu_before = time.perf_counter(), _cpu_s()
    if engine == "ours":
        cache_dir = tempfile.mkdtemp(prefix="mlsheets-side-by-side-cache-")
        try:
            report = run_jobs(jobs, cache=Cache(cache_dir), cores=1, show_progress=False, force=True)
        finally:
            shutil.rmtree(cache_dir, ignore_errors=True)
        counts = tally(jobs, report.statuses(), judged=True)
        cell_s = {key: stats.cell_s for key, stats in report.stats.items()}
    else:
        peer = run_peer(jobs, LANES, 1)
        counts, cell_s = tally(jobs, peer.outcomes, judged=False), peer.cell_s
    return {
        "engine": engine,
        "cpus": sorted(os.sched_getaffinity(0)),
        "cells": len(jobs),
        "wall": time.perf_counter() - started,
        "cpu_s": _cpu_s() - cpu_before,
        "counts": counts,
        "cell_s": cell_s,
    }


def _cpu_s() -> float:
    """User + system seconds of this process and every descendant it has waited for."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


def main(argv: list[str]) -> int:
    engine, content_dir, cpu, out = argv
    if engine not in ENGINES:
        raise SystemExit(f"engine must be one of {ENGINES}, not {engine!r}")
    result = run_one(engine, content_dir, int(cpu))
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(result, handle)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
