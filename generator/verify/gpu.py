"""`verify --device cuda`: run the GPU-capable lanes on the GPU and write this machine's ledger.

Runs with whatever interpreter starts it: on a stock CUDA machine that is the system Python with
its preinstalled PyTorch/JAX/Flax (docs/gpu.md says what else to carry), not the CPU lock's venv.
"""

from __future__ import annotations

import os
import sys
import time

from generator.lanes import LANES
from generator.model import NOT_APPLICABLE, PASSED
from generator.verify import ledger
from generator.verify.cache import Cache
from generator.verify.judge import error_line
from generator.verify.progress import summary_table
from generator.verify.runner import run_jobs
from generator.verify.verification import plan


def verify_on_device(args, load_sheets) -> int:
    """`load_sheets()` gives the content (after the GPU check: without a GPU nothing is loaded)."""
    started = time.perf_counter()
    gpus = ledger.gpu_count()
    if gpus == 0:
        print("no NVIDIA GPU here (`nvidia-smi -L` lists none): nothing was run and no ledger was written", file=sys.stderr)
        return 1
    sheets = load_sheets()
    ledger.load_all(os.path.join(args.content, "ledger"))  # an unreadable ledger stops the run before the GPU works
    jobs = plan(sheets, only=set(args.only) if args.only else None, device=args.device, gpus=gpus)
    report = run_jobs(jobs, cache=Cache(args.cache), cores=max(1, args.jobs), force=args.force, show_progress=not args.quiet, lanes=LANES)
    print(summary_table(report), file=sys.stderr)
    for note in report.notes:
        print(f"note: {note}", file=sys.stderr)
    name = args.machine or ledger.machine_name(device_name(report.results.values(), args.device))
    path = os.path.join(args.content, "ledger", f"{name}.json")
    ledger.write(path, name, jobs, report.results)
    text = summary(jobs, report.results)
    print(text, file=sys.stderr)
    if getattr(args, "summary", None):
        with open(args.summary, "w", encoding="utf-8") as handle:
            handle.write(text)
    print(f"wrote {path}; {time.perf_counter() - started:.1f} s", file=sys.stderr)
    bad = [r for r in report.results.values() if r.status not in (PASSED, NOT_APPLICABLE)]
    return 1 if bad else 0


def device_name(results, device: str) -> str:
    """The GPU's name from the results' device strings ('cuda: NVIDIA H100 80GB HBM3 (driver …)')."""
    for result in results:
        if result.device.startswith(f"{device}: "):
            return result.device.split(": ", 1)[1].rsplit(" (driver", 1)[0]
    return device


def summary(jobs, results) -> str:
    """Per lane: passed with GPU work, passed without (runs anywhere), not applicable, failed; then
    every cell that failed and why (the last line of its error)."""
    lanes: dict[str, dict[str, int]] = {}
    failures = []
    for job in jobs:
        result = results.get(job.id)
        if result is None:
            continue
        counts = lanes.setdefault(job.lane, {"gpu": 0, "anywhere": 0, "n/a": 0, "failed": 0})
        if result.status == PASSED:
            counts["anywhere" if result.used_device is False else "gpu"] += 1
        elif result.status == NOT_APPLICABLE:
            counts["n/a"] += 1
        else:
            counts["failed"] += 1
            failures.append(f"- {job.id}: {result.status}: {error_line(result.error)}")
    lines = ["| lane | passed on the GPU | runs anywhere | not applicable | failed |", "|---|---|---|---|---|"]
    for lane, c in sorted(lanes.items()):
        lines.append(f"| {lane} | {c['gpu']} | {c['anywhere']} | {c['n/a']} | {c['failed']} |")
    if failures:
        lines += ["", f"{len(failures)} job(s) failed on the GPU:", *failures]
    return "\n".join(lines) + "\n"
