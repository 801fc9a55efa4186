"""The benchmarks page: the equal-work check, the cache key, the SVG chart, the verdicts, and one real run."""

from __future__ import annotations

import collections
import copy
import json
import subprocess
import sys
import textwrap
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from generator.bench import chart as bench_chart
from generator.bench import measure as bench_measure
from generator.bench import results as bench_results
from generator.bench import run as bench_run
from generator.errors import ContentInvalid

ROOT = Path(__file__).resolve().parent.parent
SVG = "{http://www.w3.org/2000/svg}"

FAKE_BENCHDATA = """
import os
WORKLOADS = {"fake-step": {"module": "fake", "title": "Fake step", "description": "A tiny fake workload."}}
TOLERANCE = {"loss": 1e-4}
UPDATE_RTOL = 1e-3
COUNTER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "calls.txt")
DATA = {"fake": lambda: {"value": 2.0}}
REFERENCE = {"fake": lambda d: {"loss": d["value"]}}
"""

FAKE_MODULE = """
from benchdata import COUNTER
FRAMEWORK = "py"
MODES = ("good", "bad")

def build(mode, d):
    def step():
        with open(COUNTER, "a") as f:
            f.write(mode + "\\n")
        return {"loss": d["value"] * (1.5 if mode == "bad" else 1.0)}
    return step
"""

FAKE_WORKER = bench_measure.Worker("py", "py", (), {}, {"good": "py-good", "bad": "py-bad"})


def fake_root(tmp_path: Path) -> Path:
    folder = tmp_path / "repo" / "snippets" / "bench"
    folder.mkdir(parents=True)
    (folder / "benchdata.py").write_text(textwrap.dedent(FAKE_BENCHDATA))
    (folder / "fake_py.py").write_text(textwrap.dedent(FAKE_MODULE))
    return tmp_path / "repo"


def calls(root: Path) -> list[str]:
    path = root / "snippets" / "bench" / "calls.txt"
    return path.read_text().split() if path.exists() else []


# --- equal work ----------------------------------------------------------------------------------------
def test_a_variant_with_a_different_loss_fails_and_is_not_timed():
    n = {"calls": 0}

    def step():
        n["calls"] += 1
        return {"loss": 2.5}

    result = bench_measure.measure_variant(step, {"loss": 2.0}, {"loss": 1e-4})
    assert result["status"] == "failed"
    assert n["calls"] == 1  # only the checked first step ran
    assert result["steps"] == 0 and result["step_median_s"] is None and result["step_p10_s"] is None
    assert "reference 2" in result["reason"] and "not timed" in result["reason"]


def test_a_variant_within_tolerance_is_timed():
    result = bench_measure.measure_variant(lambda: {"loss": 2.0 * (1 + 5e-5)}, {"loss": 2.0}, {"loss": 1e-4})
    assert result["status"] == "ok"
    assert result["steps"] >= bench_measure.SETTINGS["min_steps"]
    assert result["step_p10_s"] <= result["step_median_s"] <= result["step_p90_s"]


def test_every_reference_metric_is_checked():
    problems = bench_measure.check_equal_work(
        {"loss": 2.0, "gsq": 11.0}, {"loss": 2.0, "gsq": 10.0}, {"loss": 1e-4, "gsq": 1e-3}
    )
    assert len(problems) == 1 and problems[0].startswith("gsq")
    assert bench_measure.check_equal_work({"loss": float("nan")}, {"loss": 2.0}, {"loss": 1e-4})
    assert bench_measure.check_equal_work({}, {"loss": 2.0}, {"loss": 1e-4})


def test_fake_workload_through_the_runner(tmp_path):
    root = fake_root(tmp_path)
    result = bench_run.run_benchmarks(root, tmp_path / "cache", workers=(FAKE_WORKER,), budget_s=60)
    variants = result["workloads"]["fake-step"]["variants"]
    assert variants["py-good"]["status"] == "ok" and variants["py-good"]["steps"] >= bench_measure.SETTINGS["min_steps"]
    assert variants["py-bad"]["status"] == "failed"
    assert variants["py-bad"]["step_median_s"] is None and variants["py-bad"]["steps"] == 0
    assert calls(root).count("bad") == 1
    assert result["complete"] and not result["cached"]
    json.dumps(result)  # serialisable

    # nothing changed: served from the cache, nothing runs
    before = len(calls(root))
    again = bench_run.run_benchmarks(root, tmp_path / "cache", workers=(FAKE_WORKER,), budget_s=60)
    assert again["cached"] and len(calls(root)) == before
    assert again["workloads"] == result["workloads"]

    # the workload code changed: it runs again
    module = root / "snippets" / "bench" / "fake_py.py"
    module.write_text(module.read_text() + "\n# changed\n")
    third = bench_run.run_benchmarks(root, tmp_path / "cache", workers=(FAKE_WORKER,), budget_s=60)
    assert not third["cached"] and len(calls(root)) > before


def test_a_run_out_of_time_reports_skipped_variants(tmp_path):
    root = fake_root(tmp_path)
    result = bench_run.run_benchmarks(root, tmp_path / "cache", workers=(FAKE_WORKER,), budget_s=1.0)
    variants = result["workloads"]["fake-step"]["variants"]
    assert {v["status"] for v in variants.values()} == {"skipped"}
    assert not result["complete"] and calls(root) == []
    # an incomplete cached run is tried again, and the fuller run replaces it
    again = bench_run.run_benchmarks(root, tmp_path / "cache", workers=(FAKE_WORKER,), budget_s=60)
    assert again["complete"] and not again["cached"]
    # a poorer run never replaces a fuller one
    assert bench_run.run_benchmarks(root, tmp_path / "cache", workers=(FAKE_WORKER,), budget_s=60)["cached"]
    poorer = bench_run.run_benchmarks(root, tmp_path / "cache", force=True, workers=(FAKE_WORKER,), budget_s=1.0)
    assert poorer["complete"] and poorer["cache_key"] == again["cache_key"]


def test_verdicts_compare_cpu_time_when_measured():
    b = synthetic_bench(jit=0.010, compiled=0.020)  # wall: jax.jit twice as fast
    for w in b["workloads"].values():
        for vid, cpu in (("jax-jit", 0.008), ("torch-compile", 0.004)):  # CPU: torch.compile twice as fast
            w["variants"][vid].update(step_cpu_median_s=cpu, step_cpu_p10_s=cpu * 0.95, step_cpu_p90_s=cpu * 1.05)
    c = {c["id"]: c for c in bench_results.claim_verdicts(b)}["jax-jit-vs-torch-compile"]
    assert c["outcome"] == "not held" and "0.50x, wall clock 2.00x" in c["verdict"]


def test_the_runner_reads_each_roots_own_workloads(tmp_path):
    fake = bench_measure._load_benchdata(fake_root(tmp_path))  # as a worker would: imported as `benchdata`
    assert list(fake.WORKLOADS) == ["fake-step"]
    real = bench_measure._load_benchdata(ROOT, isolated=True)
    assert list(real.WORKLOADS) == ["mlp-train-step", "cnn-train-step", "transformer-block", "per-example-grads"]


def test_the_update_check_drops_a_variant_that_diverges_after_one_step():
    records = [
        {"workload": "w", "variant": v, "status": "ok", "loss": 2.0, "loss_step2": after, "compile_s": 0.1,
         "step_median_s": 0.01, "step_p10_s": 0.009, "step_p90_s": 0.011, "steps": 5}
        for v, after in (("torch-eager", 1.9), ("jax-jit", 1.9), ("tf-eager", 1.95))
    ]  # fmt: skip
    out = bench_run.assemble(records, {}, {"w": {"title": "W", "description": ""}}, bench_measure.WORKERS)
    variants = out["w"]["variants"]
    assert variants["torch-eager"]["status"] == variants["jax-jit"]["status"] == "ok"
    assert variants["tf-eager"]["status"] == "failed" and variants["tf-eager"]["step_median_s"] is None
    assert variants["keras-torch"]["status"] == "skipped"  # expected but never reported


def test_lanes_balance_the_workers_and_keep_their_order():
    lanes = bench_run._lanes(bench_measure.WORKERS, 2)
    assert len(lanes) == 2 and sorted(w.name for lane in lanes for w in lane) == sorted(w.name for w in bench_measure.WORKERS)
    weights = [sum(w.weight for w in lane) for lane in lanes]
    assert max(weights) - min(weights) <= max(w.weight for w in bench_measure.WORKERS)
    order = [w.name for w in bench_measure.WORKERS]
    for lane in lanes:
        assert [w.name for w in lane] == sorted((w.name for w in lane), key=order.index)
    assert bench_run._lanes(bench_measure.WORKERS, 1) == [list(bench_measure.WORKERS)]
    assert len(bench_run._lanes((FAKE_WORKER,), 2)) == 1


# --- cache key ---------------------------------------------------------------------------------------------
def test_cache_key(tmp_path):
    root = fake_root(tmp_path)
    versions = {"python": "3.11.9", "torch": "2.13.0"}
    machine = {"cpu": "AMD EPYC", "cores": 2}
    key = bench_run.cache_key(root, versions, machine)
    assert key == bench_run.cache_key(root, dict(versions), dict(machine))
    assert key != bench_run.cache_key(root, {**versions, "torch": "2.14.0"}, machine)
    assert key != bench_run.cache_key(root, versions, {**machine, "cpu": "Intel Xeon"})
    (root / "snippets" / "bench" / "fake_py.py").write_text(FAKE_MODULE + "\n# edit\n")
    assert key != bench_run.cache_key(root, versions, machine)
    # the runner's measuring code is part of the key
    assert any(part is bench_measure.measure_variant for part in bench_run.RUNNER_PARTS)


def test_cache_key_ignores_what_does_not_measure(tmp_path, monkeypatch):
    root = fake_root(tmp_path)
    key = bench_run.cache_key(root, {"a": "1"}, {"cpu": "x", "cores": 2})
    monkeypatch.setattr(bench_measure, "FRAMEWORK_COLOURS", {"JAX": "#000"})  # chart styling is not measurement
    assert key == bench_run.cache_key(root, {"a": "1"}, {"cpu": "x", "cores": 2})
    monkeypatch.setitem(bench_measure.SETTINGS, "max_steps", 7)
    assert key != bench_run.cache_key(root, {"a": "1"}, {"cpu": "x", "cores": 2})


# --- chart, verdicts, page -----------------------------------------------------------------------------------
def _variant(vid, median, status="ok", first=1.0):
    framework, mode = bench_measure.VARIANT_LABELS[vid]
    v = {"status": status, "framework": framework, "mode": mode, "label": bench_measure.variant_label(vid), "loss": 2.3,
         "compile_s": first, "steps": 20, "step_median_s": None, "step_p10_s": None, "step_p90_s": None}  # fmt: skip
    if status == "ok":
        v.update(step_median_s=median, step_p10_s=median * 0.95, step_p90_s=median * 1.05)
    else:
        v.update(reason=f"{status} <for a reason> & more", steps=0)
    return v


def synthetic_bench(jit=0.010, compiled=0.020):
    workloads = {}
    for wid in ("mlp-train-step", "cnn-train-step", "transformer-block", "per-example-grads"):
        variants = {
            "torch-eager": _variant("torch-eager", 0.030),
            "torch-compile": _variant("torch-compile", compiled, first=20.0),
            "jax-opbyop": _variant("jax-opbyop", 0.200),
            "jax-jit": _variant("jax-jit", jit),
            "tf-eager": _variant("tf-eager", 0.050),
            "tf-function": _variant("tf-function", 0.025, first=2.0),
            "tf-xla": _variant("tf-xla", None, status="failed"),
            "keras-jax": _variant("keras-jax", None, status="none" if wid == "per-example-grads" else "skipped"),
        }
        workloads[wid] = {
            "id": wid,
            "title": f"Title of {wid} <&>",
            "description": "d",
            "reference": {"loss": 2.3},
            "variants": variants,
        }
    return {"machine": {"cpu": "AMD EPYC", "cores": 2, "accelerator": "no GPU or TPU"}, "versions": {"torch": "2.13.0"},
            "date": "2025-01-01 00:00 UTC", "wall_s": 100.0, "budget_s": 170.0, "cached": False, "complete": True,
            "settings": bench_measure.SETTINGS, "tolerance": {"first_step": {"loss": 1e-4, "gsq": 1e-3}, "after_update": 1e-3},
            "workers": {}, "workloads": workloads}  # fmt: skip


def test_svg_chart_is_well_formed_and_labelled():
    b = synthetic_bench()
    for wid, w in b["workloads"].items():
        svg = bench_chart.render_chart_svg(w)
        tree = ET.fromstring(svg)  # well-formed XML, escaping included
        assert tree.tag == SVG + "svg" and tree.get("role") == "img"
        title = tree.find(SVG + "title")
        assert title is not None and "<&>" in title.text
        assert tree.find(SVG + "desc") is not None
        assert tree.get("aria-labelledby") == f"chart-{wid}-title chart-{wid}-desc"
        texts = "".join(t.text or "" for t in tree.iter(SVG + "text"))
        for vid in w["variants"]:
            assert bench_measure.SHORT_LABELS[vid] in texts
        assert "failed the equal-work check" in texts and "10 ms" in texts
        assert not list(tree.iter(SVG + "script")) and "<script" not in svg
        assert len(list(tree.iter(SVG + "rect"))) == 2 * 6  # two panels, six measured variants


def test_svg_chart_with_nothing_measured():
    w = {"id": "x", "title": "X", "variants": {"tf-xla": _variant("tf-xla", None, status="error")}}
    ET.fromstring(bench_chart.render_chart_svg(w))
    ET.fromstring(bench_chart.render_chart_svg({"id": "y", "title": "Y", "variants": {}}))


def test_claim_verdicts_come_from_the_figures():
    claims = {c["id"]: c for c in bench_results.claim_verdicts(synthetic_bench(jit=0.010, compiled=0.020))}
    assert set(claims) >= {"jax-jit-vs-torch-compile", "jax-faster-than-pytorch", "on-the-fly-transforms", "xla-tpu"}
    c = claims["jax-jit-vs-torch-compile"]
    assert c["outcome"] == "held" and "4 of 4" in c["verdict"] and "2.00x" in c["verdict"] and "CPU" in c["verdict"]
    for c in claims.values():
        assert c["seed"].endswith(".txt") and c["claim"] and c["verdict"]
        assert c["benchmark"] in synthetic_bench()["workloads"]
    assert claims["xla-tpu"]["outcome"] == "untested"

    slower = {c["id"]: c for c in bench_results.claim_verdicts(synthetic_bench(jit=0.040, compiled=0.020))}
    assert (
        slower["jax-jit-vs-torch-compile"]["outcome"] == "not held"
        and "0 of 4" in slower["jax-jit-vs-torch-compile"]["verdict"]
    )
    tie = {c["id"]: c for c in bench_results.claim_verdicts(synthetic_bench(jit=0.0101, compiled=0.010))}
    assert "within noise" in tie["jax-jit-vs-torch-compile"]["verdict"]

    empty = synthetic_bench()
    for w in empty["workloads"].values():
        w["variants"]["jax-jit"] = _variant("jax-jit", None, status="skipped")
    assert {c["id"]: c for c in bench_results.claim_verdicts(empty)}["jax-jit-vs-torch-compile"]["outcome"] == "no data"


def test_page_renders(tmp_path):
    from generator.render import markup

    b = synthetic_bench()
    env = markup.environment()
    html = env.get_template("benchmarks.html").render(
        bench=b, charts={wid: bench_chart.render_chart_svg(w) for wid, w in b["workloads"].items()},
        claims=bench_results.claim_verdicts(b), assets=collections.defaultdict(str), nav=[], page_path="benchmarks.html")  # fmt: skip
    for wid in b["workloads"]:
        assert f'<section id="{wid}"' in html
    assert "<svg" in html and "&lt;for a reason&gt; &amp; more" in html and "<for a reason>" not in html
    assert "003_b5d63646a7eeb69c.txt" in html


def test_table_prints():
    text = bench_chart.format_table(synthetic_bench())
    assert "mlp-train-step" in text and "torch.compile" in text


# --- published results: data, rendered by the build ------------------------------------------------------
def _published(tmp_path, **changes) -> Path:
    run = {**synthetic_bench(), "schema": bench_measure.SCHEMA, "code_digest": bench_run.code_digest(ROOT), "versions": bench_run.package_versions()}
    for wid in run["workloads"]:  # a published run has no variant skipped for time
        run["workloads"][wid]["variants"]["keras-jax"] = _variant("keras-jax", 0.04)
    run.update(changes)
    return bench_results.publish(run, tmp_path / "content" / "benchmarks", "test-machine")


def test_an_incomplete_run_is_never_published(tmp_path):
    run = synthetic_bench()  # keras-jax skipped for time in three workloads
    run["complete"] = False
    with pytest.raises(ValueError, match="incomplete"):
        bench_results.publish(run, tmp_path / "benchmarks", "m")
    assert not (tmp_path / "benchmarks" / "m.json").exists()
    # nor read: a file claiming an incomplete run, or with a variant skipped, is a content error
    path = _published(tmp_path)
    data = json.loads(path.read_text())
    data["complete"] = False
    data["workloads"]["mlp-train-step"]["variants"]["torch-eager"]["status"] = "skipped"
    path.write_text(json.dumps(data))
    with pytest.raises(ContentInvalid) as raised:
        bench_results.load_published(path.parent, ROOT)
    report = raised.value.report()
    assert "test-machine.json" in report and "incomplete run" in report and "mlp-train-step/torch-eager: status 'skipped'" in report


def test_a_malformed_file_is_a_clear_error(tmp_path):
    folder = tmp_path / "benchmarks"
    folder.mkdir()
    (folder / "cut.json").write_text('{"schema": 1,')
    (folder / "empty.json").write_text("{}")
    with pytest.raises(ContentInvalid) as raised:
        bench_results.load_published(folder, ROOT)
    report = raised.value.report()
    assert "cut.json:1: not a benchmark run" in report and "empty.json:1: benchmark run: missing field 'code_digest'" in report


def test_the_published_run_is_current_until_the_workload_code_changes(tmp_path):
    path = _published(tmp_path)
    loaded = bench_results.load_published(path.parent, ROOT)
    assert loaded["stale"] == [] and loaded["file"] == "benchmarks/test-machine.json"
    root = fake_root(tmp_path)  # another workload tree: its digest differs from the one stored
    stale = bench_results.load_published(path.parent, root)
    assert len(stale["stale"]) == 1 and "workload or measuring code changed" in stale["stale"][0]
    data = json.loads(path.read_text())
    data["versions"] = {**data["versions"], "torch": "0.0.1"}
    path.write_text(json.dumps(data))
    assert "torch 0.0.1 then" in bench_results.load_published(path.parent, ROOT)["stale"][0]
    assert bench_results.load_published(tmp_path / "nothing", ROOT) is None


def test_the_build_renders_the_published_run_and_runs_no_benchmark(tmp_path):
    from tests.conftest import code_row, section, write_content

    content_dir = write_content(tmp_path / "content", {"s.yaml": section(code_row("a", "x = 1", "assert x == 1"))})
    path = _published(tmp_path, code_digest="0" * 64)
    proc = subprocess.run(
        [sys.executable, "-m", "generator", "build", "--content", content_dir, "--out", str(tmp_path / "site"), "--cache", str(tmp_path / "cache"), "--quiet"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "site" / "benchmarks.html").read_text()
    assert "benchmarks/test-machine.json" in page and "bench-stale" in page and "workload or measuring code changed" in page
    assert not (tmp_path / "cache" / "bench").exists()  # nothing was measured
    path.write_text("{}")
    proc = subprocess.run(
        [sys.executable, "-m", "generator", "build", "--content", content_dir, "--out", str(tmp_path / "site"), "--cache", str(tmp_path / "cache"), "--quiet"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 2 and "test-machine.json:1: benchmark run: missing field" in proc.stderr


def test_the_committed_run_is_valid_and_current():
    """content/benchmarks/ holds a complete run made by `make bench`; the build shows it, stale if the code moved on."""
    folder = ROOT / "content" / "benchmarks"
    published = bench_results.load_published(folder, ROOT)
    assert published is not None, "no benchmark run is published: run `make bench` and commit content/benchmarks/"
    assert published["complete"] and set(published["workloads"]) == {"mlp-train-step", "cnn-train-step", "transformer-block", "per-example-grads"}
    assert not [r for r in published["stale"] if "code changed" in r], "the workloads changed since the published run: run `make bench`"


def test_make_bench_refuses_to_publish_a_partial_run(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "generator.bench", "--only", "torch", "--publish", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 2 and "cannot be published" in proc.stderr


# --- the real thing ------------------------------------------------------------------------------------------
@pytest.mark.bench
@pytest.mark.content
def test_real_cpu_benchmark_end_to_end(tmp_path):
    """The whole CPU run, once, forced, into a temporary cache: what `make bench` publishes, checked.

    With a budget that bounds the wall time but leaves a loaded machine room: slower, not incomplete (about
    a minute of 2 cores on a quiet machine; over ten minutes at load 16 on 2 cores)."""
    budget = 1800.0
    started = time.monotonic()
    result = bench_run.run_benchmarks(ROOT, tmp_path / "bench", force=True, budget_s=budget, compile_cache_dir=tmp_path / "compile")
    elapsed = time.monotonic() - started
    print("\n" + bench_chart.format_table(result))
    assert elapsed < budget + 20, f"the benchmark run took {elapsed:.0f}s"  # the budget is a hard stop
    assert result["complete"], "variants skipped for time: " + ", ".join(
        f"{wid}/{vid}" for wid, w in result["workloads"].items() for vid, v in w["variants"].items() if v["status"] == "skipped"
    )
    bench_results.publish(result, tmp_path / "published", "this-machine")  # what make bench would commit, read back as the build reads it
    assert bench_results.load_published(tmp_path / "published", ROOT)["stale"] == []
    statuses = {(wid, vid): v["status"] for wid, w in result["workloads"].items() for vid, v in w["variants"].items()}
    assert set(result["workloads"]) == {"mlp-train-step", "cnn-train-step", "transformer-block", "per-example-grads"}
    broken = {
        k: result["workloads"][k[0]]["variants"][k[1]].get("reason")
        for k, s in statuses.items()
        if s in ("failed", "error")
    }
    assert not broken, broken
    assert statuses[("per-example-grads", "keras-jax")] == "none"
    measured = [k for k, s in statuses.items() if s == "ok"]
    assert measured, "nothing fitted in the time budget"
    for wid, vid in measured:
        v = result["workloads"][wid]["variants"][vid]
        assert v["step_p10_s"] <= v["step_median_s"] <= v["step_p90_s"] and v["compile_s"] > 0
    claims = bench_results.claim_verdicts(copy.deepcopy(result))
    assert all(c["verdict"] for c in claims)
    for w in result["workloads"].values():
        ET.fromstring(bench_chart.render_chart_svg(w))
