"""Measured, not claimed: the CPU benchmarks behind every speed verdict on the site.

Four workloads (snippets/bench/<workload>_<framework>.py, one module per workload per framework,
sharing the NumPy-made weights and data of snippets/bench/benchdata.py) run in every mode each
framework offers:

    PyTorch eager, torch.compile · JAX op-by-op (no jit), jax.jit · TensorFlow eager, tf.function,
    tf.function(jit_compile=True) · Keras train_on_batch on the JAX, torch and TensorFlow backends

Each framework (and each Keras backend) runs in its own subprocess with clean imports and KERAS_BACKEND
set, on one compute thread; the runner starts them in SETTINGS["parallel"] lanes (at most one per core),
each lane running its workers one after the other.

Equal work is checked before any time is taken: the first step of every variant must reproduce the
float64 NumPy reference of benchdata.py within its stated tolerance (rtol 1e-4 on the loss); a
variant that does not is reported as failed and is never timed. After timing, the loss each variant
reports after one update must also agree with the median of the workload's variants (rtol 1e-3),
which catches an optimiser configured differently.

Figures per variant: the first step's wall time (for the compiled modes: tracing + compilation + one
step), and the steady-state step time as the median, 10th and 90th percentile of many steps after a
warm-up, in wall time and in CPU time (every framework runs on one thread, so CPU time is the work
done whatever else the shared machine runs; the verdicts compare it). Ratios are only ever computed
between figures of the same run. A whole run must fit in SETTINGS["budget_s"] seconds of wall time:
each worker gets a share, and a variant that no longer fits is reported as skipped (the run is then
marked incomplete).

The published results are data, committed with the content: `make bench` (python -m generator.bench --force
--publish content/benchmarks) runs the benchmarks and writes content/benchmarks/<machine>.json, only when the
run is complete (every variant measured, or failed/none for a stated reason; none skipped for time). An
incomplete run is never published: it stays in .cache/bench/last-run.json and the command exits 1. The build
never runs a benchmark: it renders the newest published file (`load_published`) and marks it stale when the
workload or measuring code (`code_digest`, stored in the file) or the package versions differ from this
checkout's.

Results are also cached in .cache/bench/<key>.json, the key hashing the workload code, the measuring code
(run.RUNNER_PARTS and measure.SETTINGS; not the chart or the verdicts), the package versions and the
machine (CPU model and core count); .cache/bench/last-run.json is always the latest run. An incomplete
cached run is retried by the next call, and kept unless the new run measured more. torch.compile's
on-disk cache lives in .cache/bench/compile, so after the first run its first step is a cache hit (the
page says so, per variant); JAX and TensorFlow compile from scratch every run, as they do by default.

    python -m generator.bench [--force] [--budget S] [--only torch,jax] [--json]   # run (or load), print the table
    python -m generator.bench --force --publish content/benchmarks [--machine NAME]   # make bench

This module is the command line; measure.py measures inside a worker, run.py runs the workers,
results.py publishes, loads and judges, chart.py draws.
"""


from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from generator.bench.chart import format_table
from generator.bench.measure import PACKAGE_ROOT, SETTINGS, WORKERS, Worker, worker_main
from generator.bench.results import claim_verdicts, publish
from generator.bench.run import run_benchmarks


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m generator.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--force", action="store_true", help="run even when a cached result exists")
    parser.add_argument("--cache-dir", default=str(PACKAGE_ROOT / ".cache" / "bench"))
    parser.add_argument("--root", default=str(PACKAGE_ROOT), help="the repository root (where snippets/bench is)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON instead of a table")
    parser.add_argument(
        "--budget", type=float, help=f"wall-time budget of the run in seconds (default {SETTINGS['budget_s']:.0f})"
    )
    parser.add_argument("--only", help="run only these workers (comma-separated, e.g. torch,jax); nothing is cached")
    parser.add_argument("--publish", metavar="DIR", help="write a complete run to DIR/<machine>.json (make bench: content/benchmarks)")
    parser.add_argument("--machine", help="the published file's name (default: from the CPU model and core count)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--deadline", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        raw = json.loads(args.worker)
        spec = Worker(raw["name"], raw["suffix"], tuple(raw["imports"]), {}, raw["variants"])
        worker_main(spec, Path(args.root), Path(args.out), args.deadline or time.time() + SETTINGS["budget_s"])
        return 0
    workers, cache_dir = WORKERS, args.cache_dir
    if args.only and args.publish:
        parser.error("--only measures some workers: a partial run cannot be published")
    if args.only:
        names = args.only.split(",")
        workers = tuple(w for w in WORKERS if w.name in names)
        cache_dir = tempfile.mkdtemp(prefix="bench-only-")
    bench = run_benchmarks(args.root, cache_dir, force=args.force, budget_s=args.budget, workers=workers,
                           compile_cache_dir=Path(args.cache_dir) / "compile",
                           progress=lambda line: print(line, file=sys.stderr, flush=True))  # fmt: skip
    if args.only:
        shutil.rmtree(cache_dir, ignore_errors=True)
    if args.json:
        print(json.dumps(bench, indent=1))
    else:
        print(format_table(bench))
        print()
        for claim in claim_verdicts(bench):
            print(f"[{claim['outcome']}] {claim['claim']} ({claim['seed']})\n    {claim['verdict']}")
    if args.publish:
        try:
            target = publish(bench, args.publish, args.machine)
        except ValueError as error:
            print(f"not published: {error}; the run is in {Path(cache_dir) / 'last-run.json'}", file=sys.stderr)
            return 1
        print(f"published {target}: commit it; `make build` renders it", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
