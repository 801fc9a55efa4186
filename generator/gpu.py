"""`verify --device cuda`: run the GPU-capable lanes on the GPU and write this machine's ledger."""

from __future__ import annotations

import os
import sys
import time

from . import content, ledger
from .cache import Cache
from .lanes import LANES
from .progress import summary_table
from .runner import run_jobs
from .verify import plan


def verify_on_device(args) -> int:
    started = time.perf_counter()
    gpus = ledger.gpu_count()
    if gpus == 0:
        print("no NVIDIA GPU here (`nvidia-smi -L` lists none): nothing was run and no ledger was written", file=sys.stderr)
        return 1
    sheets = content.load(args.content)
    jobs = plan(sheets, only=set(args.only) if args.only else None, device=args.device, gpus=gpus)
    report = run_jobs(jobs, cache=Cache(args.cache), cores=max(1, args.jobs), force=args.force, show_progress=not args.quiet, lanes=LANES)
    print(summary_table(report), file=sys.stderr)
    devices = [r.device for r in report.results.values() if r.device.startswith(args.device)]
    name = args.machine or ledger.machine_name(devices[0].split(":", 1)[1].split("(")[0] if devices else args.device)
    path = os.path.join(args.content, "ledger", f"{name}.json")
    ledger.write(path, name, jobs, report.results)
    statuses: dict[str, int] = {}
    for result in report.results.values():
        statuses[result.status] = statuses.get(result.status, 0) + 1
    print(f"wrote {path}: {statuses}; {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return 1 if statuses.get("failed") or statuses.get("crashed") or statuses.get("timeout") else 0
