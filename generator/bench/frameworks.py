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
of this module (RUNNER_PARTS and SETTINGS; not the chart or the verdicts), the package versions and the
machine (CPU model and core count); .cache/bench/last-run.json is always the latest run. An incomplete
cached run is retried by the next call, and kept unless the new run measured more. torch.compile's
on-disk cache lives in .cache/bench/compile, so after the first run its first step is a cache hit (the
page says so, per variant); JAX and TensorFlow compile from scratch every run, as they do by default.

    python -m generator.bench [--force] [--budget S] [--only torch,jax] [--json]   # run (or load), print the table
    python -m generator.bench --force --publish content/benchmarks [--machine NAME]   # make bench
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import importlib.util
import inspect
import json
import math
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from xml.sax.saxutils import escape

from generator.files import atomic_write

PACKAGE_ROOT = Path(__file__).resolve().parents[2]
SCHEMA = 1

# --- settings of the measurement (part of the cache key) -------------------------------------------------
SETTINGS = {
    # one compute thread per framework: on a shared 2-core machine, multi-threaded kernels (OpenMP's spinning
    # barriers above all) measure the other tenants more than the framework; one thread each is comparable
    "threads": 1,
    # workers run this many at a time (each on one thread, so one per core, never more than the cores)
    "parallel": 2,
    "budget_s": 160.0,  # the whole run, all workers, imports and compiles included (the hard stop is 5 s later)
    "warmup_steps": 2,  # after the checked first step and the recorded second step
    "min_steps": 5,
    "max_steps": 40,
    "time_cap_s": 0.6,  # timed steps stop after this much wall time (once min_steps are done)
    "kill_grace_s": 10.0,  # a worker still busy this long after its deadline is killed
}


@dataclass(frozen=True)
class Worker:
    name: str  # also the variant-id prefix
    suffix: str  # workload modules are <module>_<suffix>.py
    imports: tuple = ()
    env: dict = field(default_factory=dict)
    variants: dict = field(default_factory=dict)  # mode -> variant id
    weight: float = 1.0  # share of the time budget (about its CPU seconds in a full run)


WORKERS = (
    Worker("torch", "torch", ("torch",), {}, {"compile": "torch-compile", "eager": "torch-eager"}, 3.0),
    Worker(
        "jax",
        "jax",
        ("jax", "flax.linen", "optax"),
        {"JAX_PLATFORMS": "cpu"},
        {"jit": "jax-jit", "opbyop": "jax-opbyop"},
        4.0,
    ),
    Worker("tf", "tf", ("tensorflow",), {}, {"function": "tf-function", "xla": "tf-xla", "eager": "tf-eager"}, 2.0),
    Worker(
        "keras-jax", "keras", ("keras",), {"KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu"}, {"fit": "keras-jax"}, 2.0
    ),
    Worker("keras-torch", "keras", ("keras",), {"KERAS_BACKEND": "torch"}, {"fit": "keras-torch"}, 1.0),
    Worker("keras-tensorflow", "keras", ("keras",), {"KERAS_BACKEND": "tensorflow"}, {"fit": "keras-tensorflow"}, 1.2),
)

SHORT_LABELS = {
    "torch-eager": "PyTorch eager",
    "torch-compile": "torch.compile",
    "jax-opbyop": "JAX op-by-op",
    "jax-jit": "jax.jit",
    "tf-eager": "TF eager",
    "tf-function": "tf.function",
    "tf-xla": "tf.function(jit_compile)",
    "keras-jax": "Keras fit · JAX",
    "keras-torch": "Keras fit · torch",
    "keras-tensorflow": "Keras fit · TF",
}
VARIANT_LABELS = {
    "torch-eager": ("PyTorch", "eager"),
    "torch-compile": ("PyTorch", "torch.compile"),
    "jax-opbyop": ("JAX", "op-by-op (no jit)"),
    "jax-jit": ("JAX", "jax.jit"),
    "tf-eager": ("TensorFlow", "eager"),
    "tf-function": ("TensorFlow", "tf.function"),
    "tf-xla": ("TensorFlow", "tf.function(jit_compile=True)"),
    "keras-jax": ("Keras", "train_on_batch · JAX backend"),
    "keras-torch": ("Keras", "train_on_batch · torch backend"),
    "keras-tensorflow": ("Keras", "train_on_batch · TensorFlow backend"),
}
FRAMEWORK_COLOURS = {"PyTorch": "#c8431c", "JAX": "#2a6cb0", "TensorFlow": "#d98a00", "Keras": "#8a3ea8"}
PACKAGES = ("torch", "jax", "jaxlib", "flax", "optax", "tensorflow", "tensorflow-cpu", "keras", "numpy", "scipy")


def variant_label(variant_id: str) -> str:
    framework, mode = VARIANT_LABELS.get(variant_id, (variant_id, ""))
    return f"{framework} {mode}".strip()


# --- measuring one variant (runs inside a worker) ---------------------------------------------------------
def _floats(out: dict) -> dict:
    """Turn a step's outputs into Python floats; this also waits for asynchronous work (JAX, TF) to finish."""
    return {key: float(value) for key, value in out.items()}


def check_equal_work(metrics: dict, reference: dict, tolerance: dict) -> list[str]:
    """The ways a first step's metrics differ from the reference beyond tolerance (empty: equal work)."""
    problems = []
    for key, expected in reference.items():
        rtol = tolerance.get(key, 1e-4)
        got = metrics.get(key)
        if got is None or not math.isfinite(got) or abs(got - expected) > rtol * abs(expected):
            problems.append(f"{key} = {got!r}, reference {expected:.6g} (rtol {rtol:g})")
    return problems


def _percentile(sorted_values: list[float], q: float) -> float:
    """Linear-interpolation percentile (q in 0..1) of already sorted values."""
    if len(sorted_values) == 1:
        return sorted_values[0]
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def measure_variant(
    step,
    reference: dict,
    tolerance: dict,
    *,
    deadline: float | None = None,
    settings: dict = SETTINGS,
    clock=time.perf_counter,
) -> dict:
    """Run `step` (a callable returning {"loss": scalar, ...}): check the first step against the reference,
    and only if it matches, warm up and time the steady state. Returns the variant's result dict."""
    started, cpu_started = clock(), time.process_time()
    first = _floats(step())
    first_s = clock() - started
    result = {"loss": first.get("loss"), "metrics": first, "compile_s": first_s, "compile_cpu_s": time.process_time() - cpu_started, "steps": 0,
              "step_median_s": None, "step_p10_s": None, "step_p90_s": None}  # fmt: skip
    problems = check_equal_work(first, reference, tolerance)
    if problems:
        result.update(
            status="failed", reason="first step does not match the reference: " + "; ".join(problems) + " (not timed)"
        )
        return result
    started = clock()
    second = _floats(step())
    warmup = [clock() - started]
    result["loss_step2"] = second.get("loss")
    for _ in range(settings["warmup_steps"]):
        started = clock()
        _floats(step())
        warmup.append(clock() - started)
    result["warmup_s"] = warmup
    times, cpu_times = [], []
    began = clock()
    while len(times) < settings["max_steps"]:
        now, cpu_now = clock(), time.process_time()
        if len(times) >= settings["min_steps"] and (
            now - began > settings["time_cap_s"] or (deadline is not None and time.time() > deadline)
        ):
            break
        _floats(step())
        times.append(clock() - now)
        cpu_times.append(time.process_time() - cpu_now)
    times.sort()
    result.update(status="ok", steps=len(times), step_median_s=statistics.median(times),
                  step_p10_s=_percentile(times, 0.1), step_p90_s=_percentile(times, 0.9),
                  step_cpu_median_s=statistics.median(cpu_times))  # fmt: skip
    cpu_times.sort()
    result.update(step_cpu_p10_s=_percentile(cpu_times, 0.1), step_cpu_p90_s=_percentile(cpu_times, 0.9))
    return result


def _load_benchdata(root: Path, isolated: bool = False):
    """snippets/bench/benchdata.py of this root. In a worker it is imported as `benchdata`, the name the workload
    modules import it by; in the runner (isolated) it is loaded under a name of its own, so that runs over
    different roots in one process never share it."""
    path = Path(root) / "snippets" / "bench" / "benchdata.py"
    if isolated:
        name = "_benchdata_" + hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    bench_dir = str(path.parent)
    if bench_dir not in sys.path:
        sys.path.insert(0, bench_dir)
    return importlib.import_module("benchdata")


def _limit_threads(n: int) -> dict:
    """Hold every framework imported in this process to n compute threads (the environment did most of it)."""
    threads = {}
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        torch.set_num_threads(n)
        threads["torch"] = torch.get_num_threads()
    if "tensorflow" in sys.modules:
        tf = sys.modules["tensorflow"]
        try:
            tf.config.threading.set_intra_op_parallelism_threads(n)
            tf.config.threading.set_inter_op_parallelism_threads(n)
        except RuntimeError:
            pass  # already initialised: the environment variables applied
        threads["tensorflow"] = tf.config.threading.get_intra_op_parallelism_threads()
    if "jax" in sys.modules:
        threads["xla_flags"] = os.environ.get("XLA_FLAGS", "")
    return threads


def _compile_cache_counters() -> tuple[int, int] | None:
    """(hits, misses) of torch.compile's on-disk FX-graph cache so far, when torch is loaded."""
    if "torch" not in sys.modules:
        return None
    try:
        from torch._dynamo.utils import counters
    except ImportError:
        return None
    return counters["inductor"]["fxgraph_cache_hit"], counters["inductor"]["fxgraph_cache_miss"]


def worker_main(spec: Worker, root: Path, out_path: Path, deadline: float) -> None:
    """One framework's subprocess: every workload, every mode; one JSON line per variant, written at once."""
    name = spec.name
    out = open(out_path, "a", encoding="utf-8", buffering=1)

    def emit(record):
        out.write(json.dumps(record) + "\n")

    started = time.perf_counter()
    for module in spec.imports:
        importlib.import_module(module)
    threads = _limit_threads(SETTINGS["threads"])
    emit(
        {
            "type": "meta",
            "worker": name,
            "import_s": time.perf_counter() - started,
            "pid": os.getpid(),
            "threads": threads,
        }
    )
    bd = _load_benchdata(root)
    tasks = []  # (mode priority, workload order, workload id, module, mode)
    for order, (workload_id, workload) in enumerate(bd.WORKLOADS.items()):
        base = {"type": "variant", "workload": workload_id}
        try:
            mod = importlib.import_module(f"{workload['module']}_{spec.suffix}")
        except Exception as exc:  # noqa: BLE001 - reported, the other workloads still run
            for variant in spec.variants.values():
                emit({**base, "variant": variant, "status": "error", "reason": f"import: {type(exc).__name__}: {exc}"})
            continue
        if not mod.MODES:
            for variant in spec.variants.values():
                emit({**base, "variant": variant, "status": "none", "reason": getattr(mod, "NOTE", "not available")})
            continue
        priority = list(spec.variants)
        for mode in mod.MODES:
            tasks.append(
                (priority.index(mode) if mode in priority else len(priority), order, workload_id, workload, mod, mode)
            )
    # mode by mode in the worker's priority order (the modes the claims compare first), so that when time runs
    # short it is the less important mode that goes missing, in every workload alike
    tasks.sort(key=lambda t: t[:2])
    inputs = {}
    for _, _, workload_id, workload, mod, mode in tasks:
        if workload_id not in inputs:
            data = bd.DATA[workload["module"]]()
            inputs[workload_id] = (data, bd.REFERENCE[workload["module"]](data))
        data, reference = inputs[workload_id]
        variant = spec.variants.get(mode, f"{name}-{mode}")
        record = {"type": "variant", "workload": workload_id, "variant": variant, "reference": reference}
        if time.time() > deadline - 1.0:
            emit({**record, "status": "skipped", "reason": "time budget spent before this variant started"})
            continue
        try:
            before = _compile_cache_counters()
            step = mod.build(mode, data)
            record.update(measure_variant(step, reference, bd.TOLERANCE, deadline=deadline))
            notes = [getattr(step, "note", None) or getattr(mod, "NOTES", {}).get(mode)]
            after = _compile_cache_counters()
            if after and after != before:
                hits, misses = after[0] - before[0], after[1] - before[1]
                notes.append(
                    f"Inductor FX-graph cache: {hits} hit{'s' * (hits != 1)}, {misses} miss{'es' * (misses != 1)}"
                )
                record["compile_cache"] = {"hits": hits, "misses": misses}
            if any(notes):
                record["note"] = "; ".join(n for n in notes if n)
        except Exception as exc:  # noqa: BLE001
            text = str(exc).strip()
            record.update(status="error", reason=f"{type(exc).__name__}: {text.splitlines()[0][:300] if text else ''}")
        emit(record)
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    emit({"type": "end", "cpu_s": own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime})
    out.close()


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


# --- publishing: the results as data ----------------------------------------------------------------------
REQUIRED = ("schema", "complete", "code_digest", "date", "machine", "versions", "wall_s", "budget_s", "workloads")


def machine_name(machine: dict) -> str:
    """A file name for a machine: its CPU model and core count, e.g. 'amd-epyc-7b13-2-cores'."""
    words = "".join(c if c.isalnum() else " " for c in str(machine.get("cpu", "cpu")).lower()).split()
    words = [w for w in words if w not in ("r", "tm", "cpu", "processor", "with")]
    return "-".join(words[:6] + [f"{machine.get('cores', '?')}-cores"])


def publish(result: dict, folder, name: str | None = None) -> Path:
    """Write a complete run to folder/<name>.json (atomically); an incomplete run raises ValueError."""
    if not result.get("complete"):
        skipped = [f"{wid}/{vid}" for wid, w in result["workloads"].items() for vid, v in w["variants"].items() if v["status"] == "skipped"]
        raise ValueError(f"the run is incomplete ({len(skipped)} variant(s) skipped for time: {', '.join(skipped[:6])}"
                         f"{'...' if len(skipped) > 6 else ''}); an incomplete run is never published")  # fmt: skip
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{name or machine_name(result['machine'])}.json"
    data = {k: v for k, v in result.items() if k != "cached"}
    atomic_write(target, json.dumps(data, indent=1) + "\n")
    return target


def _problems(data) -> list[str]:
    if not isinstance(data, dict):
        return ["not a JSON object"]
    problems = [f"missing field '{key}'" for key in REQUIRED if key not in data]
    if problems:
        return problems
    if data["schema"] != SCHEMA:
        problems.append(f"schema {data['schema']!r}, this generator reads schema {SCHEMA}")
    if data["complete"] is not True:
        problems.append("an incomplete run (variants skipped for time) cannot be published: run `make bench` again")
    if not isinstance(data["workloads"], dict) or not data["workloads"]:
        problems.append("'workloads' is empty")
    else:
        for wid, w in data["workloads"].items():
            variants = w.get("variants") if isinstance(w, dict) else None
            if not isinstance(variants, dict) or not variants:
                problems.append(f"workload '{wid}' has no variants")
                continue
            for vid, v in variants.items():
                status = v.get("status") if isinstance(v, dict) else None
                if status not in ("ok", "failed", "error", "none"):
                    problems.append(f"{wid}/{vid}: status {status!r} (published runs have ok, failed, error or none)")
                elif status == "ok" and not all(isinstance(v.get(k), (int, float)) for k in ("step_median_s", "step_p10_s", "step_p90_s")):
                    problems.append(f"{wid}/{vid}: status ok without its step times")
    return problems


def load_published(folder, repo_root=PACKAGE_ROOT) -> dict | None:
    """The newest published run in folder/*.json, with `file`, `others` and `stale` (reasons) added; None if none.

    A file that is not a complete run of this schema is a content error (ContentInvalid), listing every problem.
    """
    from generator.errors import ContentError, ContentInvalid

    folder = Path(folder)
    runs, errors = [], []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            errors.append(ContentError(str(path), getattr(error, "lineno", 1), f"not a benchmark run: {error}"))
            continue
        problems = _problems(data)
        errors += [ContentError(str(path), 1, f"benchmark run: {problem}") for problem in problems]
        if not problems:
            runs.append((data["date"], path.name, data, path))
    if errors:
        raise ContentInvalid(errors)
    if not runs:
        return None
    runs.sort(key=lambda run: (run[0], run[1]))
    _, _, data, path = runs[-1]
    stale = []
    if data["code_digest"] != code_digest(Path(repo_root)):
        stale.append("the workload or measuring code changed since this run (snippets/bench/, generator/bench/frameworks.py)")
    now = package_versions()
    changed = sorted(k for k in set(now) | set(data["versions"]) if now.get(k) != data["versions"].get(k))
    if changed:
        stale.append("package versions differ: " + ", ".join(f"{k} {data['versions'].get(k, '-')} then, {now.get(k, '-')} now" for k in changed))
    return {**data, "cached": False, "file": f"{folder.name}/{path.name}", "others": [run[1] for run in runs[:-1]], "stale": stale}


# --- reading the results --------------------------------------------------------------------------------
def _ok(workload: dict, variant_id: str) -> dict | None:
    v = workload["variants"].get(variant_id)
    return v if v and v.get("status") == "ok" and v.get("step_median_s") else None


def _steady(v: dict) -> tuple[float, float, float]:
    """(median, p10, p90) of a variant's step time as the verdicts use it: CPU time per step where measured
    (one thread per framework, so it is the work done, whatever else the shared machine was doing), else wall."""
    if v.get("step_cpu_median_s") and v.get("step_cpu_p10_s") is not None:
        return v["step_cpu_median_s"], v["step_cpu_p10_s"], v["step_cpu_p90_s"]
    return v["step_median_s"], v["step_p10_s"], v["step_p90_s"]


def compare(a: dict, b: dict) -> str:
    """'faster', 'slower' or 'tie' for a against b: a tie when their p10-p90 ranges overlap."""
    (_, a10, a90), (_, b10, b90) = _steady(a), _steady(b)
    if a90 < b10:
        return "faster"
    if a10 > b90:
        return "slower"
    return "tie"


def _fastest(workload: dict, prefix: str) -> tuple[str, dict] | None:
    found = [(vid, v) for vid, v in workload["variants"].items() if vid.startswith(prefix) and _ok(workload, vid)]
    return min(found, key=lambda item: _steady(item[1])[0]) if found else None


def _ratio_verdict(bench: dict, slower_id, faster_id, what: str) -> tuple[str, str, list]:
    """Per workload, how many times longer slower_id's step takes than faster_id's (the claim: > 1)."""
    held = lost = tie = 0
    parts, details = [], []
    for wid, w in bench["workloads"].items():
        pair = []
        for pick in (slower_id, faster_id):
            if callable(pick):
                found = pick(w)
                pair.append(found if found else (None, None))
            else:
                pair.append((pick, _ok(w, pick)))
        (sid, s), (fid, f) = pair
        if not s or not f:
            continue
        ratio = _steady(s)[0] / _steady(f)[0]
        wall_ratio = s["step_median_s"] / f["step_median_s"]
        outcome = compare(f, s)
        held, lost, tie = held + (outcome == "faster"), lost + (outcome == "slower"), tie + (outcome == "tie")
        names = "" if not callable(slower_id) else f" ({variant_label(sid)} / {variant_label(fid)})"
        parts.append(
            f"{w['title']}: {ratio:.2f}x{names}"
            + (" (within noise)" if outcome == "tie" else "")
            + f", wall clock {wall_ratio:.2f}x"
        )
        details.append(
            {"workload": wid, "ratio": ratio, "wall_ratio": wall_ratio, "outcome": outcome, "a": sid, "b": fid}
        )
    n = len(details)
    if not n:
        return "no data", "No workload has both variants measured in this run.", details
    outcome = "held" if held == n else "not held" if lost == n else "mixed"
    text = f"{what}: held on this CPU for {held} of {n} workloads"
    if tie:
        text += f" ({tie} within noise: p10-p90 ranges overlap)"
    text += ". Ratios of CPU time per step (above 1: the claim holds): " + "; ".join(parts) + "."
    return outcome, text, details


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


CPU_CAVEAT = (
    "Measured on a {cores}-core {cpu} CPU shared with other work, one thread per framework, small models; "
    "not on the GPU or TPU such claims usually mean."
)


def claim_verdicts(bench: dict) -> list[dict]:
    """Each speed claim of the source documents, reworded, with a verdict computed from this run's figures."""
    m = bench.get("machine", {})
    caveat = CPU_CAVEAT.format(cores=m.get("cores", "?"), cpu=m.get("cpu", "unknown"))
    ids = list(bench.get("workloads", {}))
    claims = []

    outcome, text, details = _ratio_verdict(
        bench, "torch-compile", "jax-jit", "torch.compile step time / jax.jit step time"
    )
    claims.append(
        {
            "id": "jax-jit-vs-torch-compile",
            "claim": "Code compiled with jax.jit runs faster than the same code compiled with torch.compile.",
            "seed": "003_b5d63646a7eeb69c.txt",
            "seed_where": "slides 'PyTorch vs JAX', 'Should I switch to JAX?', listed as a pro",
            "benchmark": "mlp-train-step",
            "benchmarks": ids,
            "outcome": outcome,
            "verdict": text + " " + caveat,
            "details": details,
        }
    )

    outcome, text, details = _ratio_verdict(
        bench, lambda w: _fastest(w, "torch-"), lambda w: _fastest(w, "jax-"),
        "fastest PyTorch mode's step time / fastest JAX mode's step time")  # fmt: skip
    claims.append(
        {
            "id": "jax-faster-than-pytorch",
            "claim": "Moving a PyTorch training loop to JAX may speed it up.",
            "seed": "003_b5d63646a7eeb69c.txt",
            "seed_where": "slides 'PyTorch vs JAX', 'Should I switch to JAX?', listed as a pro ('potentially')",
            "benchmark": "mlp-train-step",
            "benchmarks": ids,
            "outcome": outcome,
            "verdict": text + " " + caveat,
            "details": details,
        }
    )

    outcome2, text2, details2 = _ratio_verdict(
        bench, "tf-function", "tf-xla", "tf.function step time / tf.function(jit_compile=True) step time"
    )
    claims.append(
        {
            "id": "xla-tpu",
            "claim": "On TPUs, JAX performs best, TensorFlow well, and PyTorch is held back by its limited XLA support; XLA is at its best on TPU.",
            "seed": "001_e00b01c35120b123.txt",
            "seed_where": "trade-off table, 'TPU performance' row, and 'Choose JAX when'",
            "benchmark": "mlp-train-step",
            "benchmarks": ids,
            "outcome": "untested",
            "verdict": "Not tested: this machine has no TPU (nor GPU), and CPU figures say nothing about TPU performance. "
            "For what XLA does on this CPU: " + text2.replace("held on this CPU for", "XLA faster for"),
            "details": details2,
        }
    )

    # on-the-fly transformation (torch.func, JAX without jit) against transforming a built graph (TF pfor)
    pe = bench.get("workloads", {}).get("per-example-grads")
    outcome, text, details = "no data", "The per-example-gradient variants needed were not measured in this run.", []
    if pe:
        tf_graph = _ok(pe, "tf-function")
        fly = [(vid, _ok(pe, vid)) for vid in ("torch-eager", "jax-opbyop") if _ok(pe, vid)]
        if tf_graph and fly:
            parts, wins = [], {"steady": 0, "first": 0}
            for vid, v in fly:
                r_steady = _steady(tf_graph)[0] / _steady(v)[0]
                r_first = tf_graph["compile_s"] / v["compile_s"]
                wins["steady"] += r_steady > 1
                wins["first"] += r_first > 1
                parts.append(f"against {variant_label(vid)}, tf.function takes {r_steady:.2f}x the CPU time per step and "
                             f"{r_first:.2f}x the first-call time")  # fmt: skip
                details.append(
                    {
                        "workload": "per-example-grads",
                        "a": "tf-function",
                        "b": vid,
                        "ratio": r_steady,
                        "first_call_ratio": r_first,
                    }
                )
            n = len(fly)
            total = wins["steady"] + wins["first"]
            outcome = "held" if total == 2 * n else "not held" if total == 0 else "mixed"
            text = (f"Per-example gradients, on-the-fly transforms against TensorFlow's graph-based jacobian (pfor): the on-the-fly "
                    f"variant was faster in steady state for {wins['steady']} of {n} and on the first call (transform + run) for "
                    f"{wins['first']} of {n}. " + _sentence("; ".join(parts)) + ". The essay's 'efficient' may also mean engineering effort, "
                    "which no timing measures. " + caveat)  # fmt: skip
    claims.append(
        {
            "id": "on-the-fly-transforms",
            "claim": "Transforming a function on the fly as it runs (PyTorch's dispatcher, JAX's grad and vmap) is more efficient "
            "than first building an IR and transforming that (Theano, TensorFlow).",
            "seed": "002_8d615be2eccbfb79.txt",
            "seed_where": "essay on functional transformations, PyTorch section",
            "benchmark": "per-example-grads",
            "benchmarks": ["per-example-grads"],
            "outcome": outcome,
            "verdict": text,
            "details": details,
        }
    )
    if not bench.get("complete", True):
        for claim in claims:
            if claim["outcome"] != "untested":
                claim["verdict"] += (" This run is incomplete: some variants were skipped for time, so some comparisons are "
                                     "missing or made against fewer modes.")  # fmt: skip
    return claims


# --- chart -----------------------------------------------------------------------------------------------
def _fmt_s(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds >= 1.0:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} µs"


def _fmt_tick(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale * 0.999:
            return f"{seconds / scale:.0f} {unit}"
    return f"{seconds * 1e9:.0f} ns"


def _log_axis(values: list[float]) -> tuple[float, float]:
    lo = 10 ** math.floor(math.log10(min(values)))
    if min(values) / lo < 2:  # leave the shortest bar some length
        lo /= 10
    hi = 10 ** math.ceil(math.log10(max(values)))
    if hi <= lo:
        hi = lo * 10
    return lo, hi


def render_chart_svg(workload_result: dict) -> str:
    """A static, accessible SVG bar chart of one workload: steady-state step time (median, with the p10-p90
    range as a whisker) and first-step time, per variant, on log scales. No script; every bar has a text label."""
    wid = "".join(c if c.isalnum() or c == "-" else "-" for c in str(workload_result.get("id", "workload")))
    title = str(workload_result.get("title", wid))
    variants = list(workload_result.get("variants", {}).items())
    row_h, top, label_w, panel_w, value_w, gap = 22, 58, 180, 200, 70, 14
    panels = [("Steady-state step (median, p10-p90)", "step_median_s"), ("First step, incl. compile", "compile_s")]
    width = label_w + len(panels) * (panel_w + value_w + gap)
    height = top + row_h * max(1, len(variants)) + 40
    ok = [(vid, v) for vid, v in variants if v.get("status") == "ok" and v.get("step_median_s")]
    desc_parts = [f"{v.get('label', vid)}: median step {_fmt_s(v['step_median_s'])} wall, {_fmt_s(v.get('step_cpu_median_s'))} CPU, "
                  f"first step {_fmt_s(v.get('compile_s'))}" for vid, v in ok]  # fmt: skip
    desc_parts += [f"{v.get('label', vid)}: {v.get('status')}" for vid, v in variants if (vid, v) not in ok]
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="bench-chart" role="img" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" aria-labelledby="chart-{wid}-title chart-{wid}-desc">',
        f'<title id="chart-{wid}-title">{escape(title)}: time per step by framework and mode (log scale, shorter is faster)</title>',
        f'<desc id="chart-{wid}-desc">{escape("; ".join(desc_parts) or "no measurements")}.</desc>',
    ]  # styled by the site's stylesheet (.bench-chart): a strict CSP forbids inline <style>
    for p, (caption, key) in enumerate(panels):
        x0 = label_w + p * (panel_w + value_w + gap)
        out.append(f'<text x="{x0}" y="16" font-weight="bold">{escape(caption)}</text>')
        values = [v[key] for _, v in ok if v.get(key)]
        if key == "step_median_s":
            values += [v[k] for _, v in ok for k in ("step_p10_s", "step_p90_s", "step_cpu_median_s") if v.get(k)]
        if not values:
            continue
        lo, hi = _log_axis(values)
        decades = round(math.log10(hi / lo))

        def xpos(value, x0=x0, lo=lo, decades=decades):
            return x0 + panel_w * (math.log10(max(value, lo)) - math.log10(lo)) / decades

        for d in range(decades + 1):
            tick = lo * 10**d
            x = x0 + panel_w * d / decades
            out.append(
                f'<line class="grid" x1="{x:.1f}" y1="{top - 8}" x2="{x:.1f}" y2="{top + row_h * len(variants)}"/>'
            )
            out.append(
                f'<text class="axis" x="{x:.1f}" y="{top - 12}" text-anchor="middle">{escape(_fmt_tick(tick))}</text>'
            )
        for i, (_vid, v) in enumerate(variants):
            y = top + i * row_h
            value = v.get(key) if v.get("status") == "ok" else None
            if not value:
                continue
            colour = FRAMEWORK_COLOURS.get(v.get("framework", ""), "#666")
            x1 = xpos(value)
            out.append(
                f'<rect x="{x0}" y="{y + 4}" width="{max(1.0, x1 - x0):.1f}" height="{row_h - 8}" fill="{colour}"/>'
            )
            if key == "step_median_s" and v.get("step_p10_s") and v.get("step_p90_s"):
                a, b = xpos(v["step_p10_s"]), xpos(v["step_p90_s"])
                yc = y + row_h / 2
                out.append(f'<line class="whisker" x1="{a:.1f}" y1="{yc}" x2="{b:.1f}" y2="{yc}"/>')
                out.append(f'<line class="whisker" x1="{a:.1f}" y1="{yc - 4}" x2="{a:.1f}" y2="{yc + 4}"/>')
                out.append(f'<line class="whisker" x1="{b:.1f}" y1="{yc - 4}" x2="{b:.1f}" y2="{yc + 4}"/>')
            if key == "step_median_s" and v.get("step_cpu_median_s"):
                xc, yc = xpos(v["step_cpu_median_s"]), y + row_h / 2
                out.append(
                    f'<path class="cpu" d="M{xc:.1f} {yc - 5:.1f} L{xc + 4:.1f} {yc:.1f} L{xc:.1f} {yc + 5:.1f} L{xc - 4:.1f} {yc:.1f} Z"/>'
                )
            out.append(f'<text x="{x0 + panel_w + 6}" y="{y + row_h - 7}">{escape(_fmt_s(value))}</text>')
    for i, (vid, v) in enumerate(variants):
        y = top + i * row_h
        out.append(
            f'<text x="{label_w - 8}" y="{y + row_h - 7}" text-anchor="end">{escape(SHORT_LABELS.get(vid, v.get("label", vid)))}</text>'
        )
        if v.get("status") != "ok" or not v.get("step_median_s"):
            out.append(f'<text class="status" x="{label_w}" y="{y + row_h - 7}">{escape(_status_text(v))}</text>')
    steps = max((v.get("steps") or 0) for _, v in variants) if variants else 0
    out.append(f'<text class="axis" x="8" y="{height - 18}">Log scales. Bars: median wall time, whiskers: 10th-90th percentile '
               f'of up to {steps} timed steps;</text>')  # fmt: skip
    out.append(
        f'<text class="axis" x="8" y="{height - 5}">Diamonds: median CPU time per step (short of the bar end: the step waited '
        "for a core; beyond it: work on a second thread).</text>"
    )
    out.append("</svg>")
    return "\n".join(out)


def _status_text(v: dict) -> str:
    status = v.get("status", "missing")
    return {"failed": "failed the equal-work check", "error": "error: did not run",
            "skipped": "skipped: time budget", "none": "none: no such API"}.get(status, status)  # fmt: skip


# --- the table ---------------------------------------------------------------------------------------------
def format_table(bench: dict) -> str:
    lines = []
    m = bench["machine"]
    load = bench.get("load_avg")
    lines.append(f"CPU benchmarks: {m['cpu']}, {m['cores']} cores; {bench['date']}; wall {bench['wall_s']:.1f}s "
                 f"(budget {bench['budget_s']:.0f}s){f'; load average {load[0]:.1f}' if load else ''}"
                 f"{'; from cache' if bench.get('cached') else ''}{'' if bench.get('complete', True) else '; INCOMPLETE'}")  # fmt: skip
    lines.append(
        "medians and percentiles of wall time per step; cpu ms: median CPU time per step (one thread per framework)"
    )
    lines.append("versions: " + ", ".join(f"{k} {v}" for k, v in bench["versions"].items()))
    head = (f"{'workload':<19} {'variant':<42} {'status':<8} {'loss':>10} {'first s':>8} {'median ms':>10} {'p10 ms':>8} "
            f"{'p90 ms':>8} {'cpu ms':>8} {'steps':>5}")  # fmt: skip
    lines.append(head)
    lines.append("-" * len(head))
    for wid, w in bench["workloads"].items():
        for vid, v in w["variants"].items():

            def ms(key, v=v):
                return f"{v[key] * 1e3:.2f}" if v.get(key) is not None else "-"

            loss = f"{v['loss']:.6f}" if v.get("loss") is not None else "-"
            first = f"{v['compile_s']:.2f}" if v.get("compile_s") is not None else "-"
            lines.append(f"{wid:<19} {v.get('label', vid):<42} {v['status']:<8} {loss:>10} {first:>8} {ms('step_median_s'):>10} "
                         f"{ms('step_p10_s'):>8} {ms('step_p90_s'):>8} {ms('step_cpu_median_s'):>8} {v.get('steps') or 0:>5}")  # fmt: skip
        ref = w.get("reference") or {}
        lines.append(f"{'':<19} reference (NumPy float64): " + ", ".join(f"{k} {val:.6f}" for k, val in ref.items()))
    problems = [
        (wid, vid, v.get("reason", ""))
        for wid, w in bench["workloads"].items()
        for vid, v in w["variants"].items()
        if v["status"] in ("failed", "error", "skipped")
    ]
    if problems:
        lines.append("")
        lines += [f"  {wid}/{vid}: {reason}" for wid, vid, reason in problems]
    lines.append("")
    lines.append(
        "workers: "
        + "; ".join(
            f"{k} {i['status']} {i['wall_s']:.1f}s (import {i['import_s'] or 0:.1f}s)"
            for k, i in bench["workers"].items()
        )
    )
    return "\n".join(lines)


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
