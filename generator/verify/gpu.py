"""`verify --device cuda`: run the GPU-capable lanes on the GPU and write this machine's ledger.

Runs with whatever interpreter starts it: on a stock CUDA machine that is the system Python with
its preinstalled PyTorch/JAX/Flax (docs/gpu.md says what else to carry), not the CPU lock's venv.
"""

from __future__ import annotations

import os

from generator.model import NOT_APPLICABLE, PASSED, Sheet
from generator.verify import ledger
from generator.verify.cache import Cache
from generator.verify.judge import error_line
from generator.verify.recorded import RecordedRun, run_and_record
from generator.verify.verification import plan


def verify_on_device(sheets: list[Sheet], content_dir: str, *, device: str, gpus: int, cache: Cache, cores: int,
                     only: set[str] | None = None, machine: str | None = None, force: bool = False,
                     show_progress: bool = True, sandbox: str | None = None) -> RecordedRun:  # fmt: skip
    """Run the GPU-capable jobs of `sheets` on `device` and write content_dir/ledger/<machine>.json
    (the machine named after the GPU unless given). The caller has checked there are `gpus` GPUs."""
    jobs = plan(sheets, only=only, device=device, gpus=gpus)

    def name(report) -> str:
        return machine or ledger.machine_name(device_name(report.results.values(), device))

    folder = os.path.join(content_dir, "ledger")
    return run_and_record(jobs, folder, name, cache=cache, cores=cores, force=force, show_progress=show_progress, sandbox=sandbox)


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
