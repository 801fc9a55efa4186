"""Running the benchmark workers within the time budget, caching and assembling a run (see frameworks.py
for what is measured and why)."""


from __future__ import annotations

import hashlib
import inspect
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

from generator.bench.measure import (
    PACKAGE_ROOT,
    PACKAGES,
    SCHEMA,
    SETTINGS,
    VARIANT_LABELS,
    WORKERS,
    Worker,
    _compile_cache_counters,
    _floats,
    _limit_threads,
    _load_benchdata,
    _percentile,
    check_equal_work,
    measure_variant,
    variant_label,
    worker_main,
)
from generator.files import atomic_write


# --- the runner ---------------------------------------------------------------------------------------------
def package_versions() -> dict:
    versions = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return versions


def machine_info() -> dict:
    from generator.verify.machine import cpu_model

    cpu = cpu_model()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cpu": cpu,
        "cores": cores,
        "system": f"{platform.system()} {platform.machine()}",
        "accelerator": "no GPU or TPU",
    }


def code_digest(root: Path) -> str:
    """Hash of the workload code (snippets/bench/*.py) and of the measuring code of this module."""
    h = hashlib.sha256()
    for path in sorted((Path(root) / "snippets" / "bench").glob("*.py")):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    for part in RUNNER_PARTS:  # noqa: F821 - defined below, read at call time
        h.update(inspect.getsource(part).encode())
    h.update(json.dumps(SETTINGS, sort_keys=True).encode())
    h.update(repr(WORKERS).encode())
    return h.hexdigest()


def cache_key(root: Path, versions: dict | None = None, machine: dict | None = None) -> str:
    versions = package_versions() if versions is None else versions
    machine = machine_info() if machine is None else machine
    blob = json.dumps({"schema": SCHEMA, "code": code_digest(root), "versions": versions,
                       "cpu": machine.get("cpu"), "cores": machine.get("cores")}, sort_keys=True)  # fmt: skip
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def _worker_env(spec: Worker, compile_cache: Path | None) -> dict:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("KERAS_BACKEND", "XLA_FLAGS", "JAX_PLATFORMS", "CUDA_VISIBLE_DEVICES")
    }
    env.update({"TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONUNBUFFERED": "1", "CUDA_VISIBLE_DEVICES": ""})
    n = str(SETTINGS["threads"])
    env.update({"OMP_NUM_THREADS": n, "MKL_NUM_THREADS": n, "OPENBLAS_NUM_THREADS": n, "TF_NUM_INTRAOP_THREADS": n,
                "TF_NUM_INTEROP_THREADS": n, "TORCHINDUCTOR_COMPILE_THREADS": n})  # fmt: skip
    if SETTINGS["threads"] == 1:
        env["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    env["PYTHONPATH"] = os.pathsep.join([str(PACKAGE_ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    if compile_cache is not None:
        env["TORCHINDUCTOR_CACHE_DIR"] = str(compile_cache / "torchinductor")
    env.update(spec.env)
    return env


def _read_records(path: Path) -> list[dict]:
    records = []
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                pass  # a line cut short by a kill
    return records


def _lanes(workers, n: int) -> list[list]:
    """Split the workers into n lanes of about equal weight, keeping their order within each lane."""
    lanes = [[] for _ in range(max(1, min(n, len(workers))))]
    loads = [0.0] * len(lanes)
    for spec in sorted(workers, key=lambda w: -w.weight):
        i = loads.index(min(loads))
        lanes[i].append(spec)
        loads[i] += spec.weight
    order = {w.name: k for k, w in enumerate(workers)}
    return [sorted(lane, key=lambda w: order[w.name]) for lane in lanes if lane]


def _run_lane(
    lane, root: Path, hard_end: float, scratch: Path, compile_cache, records: list, info: dict, progress
) -> None:
    """Run one lane's workers one after the other, each with its share of the time left."""
    for i, spec in enumerate(lane):
        remaining = hard_end - time.time()
        share = max(0.0, remaining) * spec.weight / sum(w.weight for w in lane[i:])
        deadline = time.time() + share
        out_path, log_path = scratch / f"{spec.name}.jsonl", scratch / f"{spec.name}.log"
        started = time.perf_counter()
        status = "ok"
        if remaining < 3.0:
            status = "skipped"
        else:
            worker_spec = json.dumps(
                {"name": spec.name, "suffix": spec.suffix, "imports": list(spec.imports), "variants": spec.variants}
            )
            cmd = [sys.executable, "-m", "generator.bench", "--worker", worker_spec, "--root", str(root),
                   "--out", str(out_path), "--deadline", repr(deadline)]  # fmt: skip
            with open(log_path, "wb") as log:
                proc = subprocess.Popen(
                    cmd,
                    cwd=str(PACKAGE_ROOT),
                    env=_worker_env(spec, compile_cache),
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
                try:
                    proc.wait(timeout=max(1.0, min(deadline + SETTINGS["kill_grace_s"], hard_end + 5.0) - time.time()))
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, 9)
                    proc.wait()
                    status = "killed at its deadline"
            if status == "ok" and proc.returncode != 0:
                status = f"exit status {proc.returncode}"
        got = _read_records(out_path)
        meta = next((r for r in got if r.get("type") == "meta"), {})
        end = next((r for r in got if r.get("type") == "end"), {})
        info[spec.name] = {"status": status, "wall_s": round(time.perf_counter() - started, 2), "import_s": meta.get("import_s"),
                           "cpu_s": end.get("cpu_s"), "budget_s": round(share, 1)}  # fmt: skip
        if status != "ok" and log_path.exists():
            info[spec.name]["log_tail"] = log_path.read_text(encoding="utf-8", errors="replace")[-1500:]
        variants = [r for r in got if r.get("type") == "variant"]
        records.extend(variants)
        if progress:
            done = ", ".join(f"{r['workload']}/{r['variant']}:{r['status']}" for r in variants)
            progress(f"[bench] {spec.name}: {status}, {info[spec.name]['wall_s']:.1f}s wall ({done})")


def run_workers(
    root: Path, budget_s: float, workers=WORKERS, compile_cache: Path | None = None, progress=None, parallel: int = 1
) -> tuple[list[dict], dict]:
    """Run the workers' subprocesses within the budget, `parallel` lanes at a time (each worker is single-threaded,
    so one lane per core); return (variant records, per-worker info)."""
    hard_end = time.time() + budget_s
    records, info = [], {}
    scratch = Path(tempfile.mkdtemp(prefix="bench-"))
    threads = [
        threading.Thread(target=_run_lane, args=(lane, root, hard_end, scratch, compile_cache, records, info, progress))
        for lane in _lanes(workers, parallel)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    shutil.rmtree(scratch, ignore_errors=True)
    return records, info


# the code whose source is part of the cache key: what measures, not what presents
RUNNER_PARTS = (
    Worker,
    _floats,
    check_equal_work,
    _percentile,
    measure_variant,
    _load_benchdata,
    _limit_threads,
    _compile_cache_counters,
    worker_main,
    _worker_env,
    _lanes,
    _run_lane,
)


def _update_check(variants: dict, rtol: float) -> None:
    """After one update, every ok variant's loss must agree with the median of the workload's variants."""
    after = [v["loss_step2"] for v in variants.values() if v.get("status") == "ok" and v.get("loss_step2") is not None]
    if len(after) < 2:
        return
    consensus = statistics.median(after)
    for v in variants.values():
        if (
            v.get("status") == "ok"
            and v.get("loss_step2") is not None
            and abs(v["loss_step2"] - consensus) > rtol * abs(consensus)
        ):
            v.update(status="failed", reason=f"after one update the loss is {v['loss_step2']:.6g}, the median of the variants is "
                     f"{consensus:.6g} (rtol {rtol:g}): the update step does different work; timings dropped",
                     step_median_s=None, step_p10_s=None, step_p90_s=None)  # fmt: skip


def assemble(records: list[dict], info: dict, workloads: dict, workers=WORKERS, update_rtol: float = 1e-3) -> dict:
    """Per workload, per variant (in the fixed order of the workers), with a status for every expected variant."""
    expected = [v for w in workers for v in w.variants.values()]
    first_seen = list(expected)
    expected.sort(
        key=lambda v: (
            list(VARIANT_LABELS).index(v) if v in VARIANT_LABELS else len(VARIANT_LABELS) + first_seen.index(v)
        )
    )
    out = {}
    for workload_id, workload in workloads.items():
        variants = {}
        for variant_id in expected:
            rec = next((r for r in records if r["workload"] == workload_id and r["variant"] == variant_id), None)
            if rec is None:
                worker = next(w for w in workers if variant_id in w.variants.values())
                rec = {
                    "status": "skipped",
                    "reason": f"not run: worker {worker.name} {info.get(worker.name, {}).get('status', 'did not run')} (time budget)",
                }
            rec = {k: v for k, v in rec.items() if k not in ("type", "workload", "variant")}
            framework, mode = VARIANT_LABELS.get(variant_id, (variant_id, ""))
            rec.update(framework=framework, mode=mode, label=variant_label(variant_id))
            variants[variant_id] = rec
        _update_check(variants, update_rtol)
        reference = next((v.get("reference") for v in variants.values() if v.get("reference")), None)
        for v in variants.values():
            v.pop("reference", None)
        out[workload_id] = {"id": workload_id, "title": workload["title"], "description": workload["description"],
                            "reference": reference, "variants": variants}  # fmt: skip
    return out


def _measured(result: dict) -> int:
    return sum(v["status"] != "skipped" for w in result["workloads"].values() for v in w["variants"].values())


def run_benchmarks(repo_root, cache_dir, force: bool = False, *, budget_s: float | None = None, workers=WORKERS,
                   compile_cache_dir=None, progress=None, retry_incomplete: bool = True) -> dict:  # fmt: skip
    """Run (or load from cache) the CPU benchmarks; return a JSON-serialisable dict.

    {machine, versions, date, wall_s, cache_key, cached, complete, tolerance, workers,
     workloads: {id: {id, title, description, reference, variants: {variant id: {status, loss, compile_s,
     step_median_s, step_p10_s, step_p90_s, step_cpu_median_s, steps, label, framework, mode, reason?, note?}}}}}

    A complete cached result is returned as it is. An incomplete one (variants skipped for time, on a busy
    machine) is run again when retry_incomplete is true. A new run (forced or not) replaces the cached one
    unless it measured fewer variants; runs are never merged, so every ratio still comes from one run.
    """
    root, cache_dir = Path(repo_root), Path(cache_dir)
    versions, machine = package_versions(), machine_info()
    key = cache_key(root, versions, machine)
    cache_file = cache_dir / f"{key}.json"
    previous = None
    if cache_file.exists():
        try:
            previous = json.loads(cache_file.read_text(encoding="utf-8"))
            previous["cached"] = True
            _measured(previous)
        except (OSError, json.JSONDecodeError, KeyError, TypeError, AttributeError):
            previous = None
    if not force and previous is not None and (previous.get("complete") or not retry_incomplete):
        return previous
    bd = _load_benchdata(root, isolated=True)
    budget = SETTINGS["budget_s"] if budget_s is None else budget_s
    compile_cache = Path(compile_cache_dir) if compile_cache_dir else cache_dir / "compile"
    started = time.perf_counter()
    # lanes only with single-threaded workers, and never more lanes than cores
    parallel = 1 if SETTINGS["threads"] != 1 else max(1, min(SETTINGS["parallel"], machine.get("cores") or 1))
    records, info = run_workers(root, budget, workers, compile_cache, progress, parallel)
    wall = time.perf_counter() - started
    workloads = assemble(records, info, bd.WORKLOADS, workers, getattr(bd, "UPDATE_RTOL", 1e-3))
    complete = all(v["status"] != "skipped" for w in workloads.values() for v in w["variants"].values())
    result = {
        "schema": SCHEMA,
        "cache_key": key,
        "code_digest": code_digest(root),
        "cached": False,
        "complete": complete,
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine,
        "versions": versions,
        "wall_s": round(wall, 2),
        "budget_s": budget,
        "load_avg": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "settings": SETTINGS,
        "tolerance": {"first_step": dict(bd.TOLERANCE), "after_update": getattr(bd, "UPDATE_RTOL", 1e-3)},
        "workers": info,
        "workloads": workloads,
    }
    # cached even when incomplete (the page says so); last-run.json is always the latest run
    cache_dir.mkdir(parents=True, exist_ok=True)
    text = json.dumps(result, indent=1)  # key order matters: workloads and variants are in page order
    keep = previous is None or _measured(result) >= _measured(previous)
    for target in (cache_file, cache_dir / "last-run.json") if keep else (cache_dir / "last-run.json",):
        atomic_write(target, text)
    if not keep and progress:
        progress(f"[bench] this run measured {_measured(result)} variants, the cached run {_measured(previous)}: keeping the "
                 f"cached run (this one is in {cache_dir / 'last-run.json'})")  # fmt: skip
    return result if keep else previous
