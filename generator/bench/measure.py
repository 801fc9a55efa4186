"""The benchmark settings, the workers (one per framework or Keras backend) and measuring one
variant inside a worker process. What is here is part of the results' cache key (see run.py)."""


from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import math
import os
import resource
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

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
