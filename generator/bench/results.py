"""A run as data: publishing it (complete runs only), loading the newest published one, and the
verdicts on the seeds' speed claims."""


from __future__ import annotations

import json
from pathlib import Path

from generator.bench.measure import PACKAGE_ROOT, SCHEMA, variant_label
from generator.files import atomic_write

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
    from generator.bench.run import code_digest, package_versions  # here: `check` without a run imports none of it

    runs.sort(key=lambda run: (run[0], run[1]))
    _, _, data, path = runs[-1]
    stale = []
    if data["code_digest"] != code_digest(Path(repo_root)):
        stale.append("the workload or measuring code changed since this run (snippets/bench/, generator/bench/measure.py, run.py)")
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
