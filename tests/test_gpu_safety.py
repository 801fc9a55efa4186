"""What makes GPU results count and GPU workers safe, tested on a CPU: the ledger's identity survives
another machine's versions, the fork guard falls back to spawn, optional imports may be missing,
a cell that imports what the machine lacks is not applicable, and GPU evidence decides coverage."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import shutil
import subprocess
import sys

from generator.lanes import Lane
from generator.load import content
from generator.model import NOT_APPLICABLE, PASSED, Cell, Job, Result, Snippet, Source
from generator.verify import ledger
from generator.verify.cache import Cache, job_identity, job_key
from generator.verify.judge import device_evidence
from generator.verify.lane_worker import WORKER_SCRIPT
from generator.verify.runner import run_jobs
from generator.verify.verification import Verification, judge, plan, verify
from tests.conftest import ROOT, code_row, section, write_content

SAMPLE = os.path.join(ROOT, "tests", "samples", "golden")


def _jobs(lane: Lane, *codes: str, timeout: float = 30.0) -> list[Job]:
    jobs = []
    for index, code in enumerate(codes):
        cell = Cell(column=f"c{index}", kind="code", source=Source("x.yaml", 1), code=Snippet(code, 1), lanes=(lane.name,))
        jobs.append(Job("s", "r", f"c{index}", lane.name, cell, timeout, job_key(cell, lane), job_identity(cell, lane)))
    return jobs


def test_a_worker_holding_threads_spawns_each_cell_and_says_so_once(tmp_path):
    prelude = "import threading, time\nthreading.Thread(target=time.sleep, args=(3600,), daemon=True).start()\n"
    lane = Lane("threaded", ("json",), (), prelude=prelude)
    jobs = _jobs(
        lane,
        "import sys\nassert '--cell' in sys.argv  # a fresh interpreter, not a fork of the worker\nimport json\njson.MARK = 1",
        "import json\nassert not hasattr(json, 'MARK')  # nothing leaks between spawned cells",
        "while True:\n    pass",
        timeout=3.0,
    )
    # the endless cell times out after 3 s; the others get room to start an interpreter on a loaded machine
    jobs[:2] = [dataclasses.replace(job, timeout=120.0) for job in jobs[:2]]
    report = run_jobs(jobs, cache=Cache(str(tmp_path)), cores=2, show_progress=False, lanes={lane.name: lane})
    statuses = [report.results[job.id].status for job in jobs]
    assert statuses == [PASSED, PASSED, "timeout"], [report.results[job.id].error for job in jobs]
    assert len(report.notes) == 1 and "holds 2 threads" in report.notes[0] and "fresh interpreter" in report.notes[0]


def test_a_safe_worker_forks(tmp_path):
    lane = Lane("plain", ("json",), ())
    jobs = _jobs(lane, "import sys\nassert '--cell' not in sys.argv")
    report = run_jobs(jobs, cache=Cache(str(tmp_path)), cores=1, show_progress=False, lanes={lane.name: lane})
    assert report.results[jobs[0].id].status == PASSED and report.notes == []


def test_a_worker_that_imports_pyarrow_still_forks(tmp_path):
    """pyarrow (which Keras imports through pandas) starts jemalloc's purging thread at import unless
    the runner turns it off: without that every cell of a Keras lane would spawn."""
    if importlib.util.find_spec("pyarrow") is None:
        import pytest

        pytest.skip("pyarrow is not installed")
    lane = Lane("arrow", ("pyarrow",), ())
    jobs = _jobs(lane, "import sys\nassert '--cell' not in sys.argv\nimport pyarrow as pa\nassert pa.array([1, 2]).sum().as_py() == 3")
    report = run_jobs(jobs, cache=Cache(str(tmp_path)), cores=1, show_progress=False, lanes={lane.name: lane})
    assert report.results[jobs[0].id].status == PASSED, report.results[jobs[0].id].error
    assert report.notes == []


def test_a_lane_starts_without_its_optional_imports(tmp_path):
    lane = Lane("optional", ("json",), (), optional_imports=("no_such_module_xyz", "no_such_package_xyz.sub", "decimal"))
    jobs = _jobs(lane, "import sys\nassert 'decimal' in sys.modules and 'no_such_module_xyz' not in sys.modules")
    report = run_jobs(jobs, cache=Cache(str(tmp_path)), cores=1, show_progress=False, lanes={lane.name: lane})
    assert report.results[jobs[0].id].status == PASSED, report.results[jobs[0].id].error


def test_keras_lanes_import_tensorflow_only_where_installed():
    from generator.lanes import LANES

    for backend in ("jax", "torch"):
        assert "tensorflow" not in LANES[f"keras@{backend}"].imports
    assert LANES["keras@jax"].optional_imports == ("jaxlib.mlir.dialects.mhlo", "tensorflow")
    assert LANES["keras@torch"].optional_imports == ("tensorflow",)
    assert "tensorflow" in LANES["keras@tensorflow"].imports
    assert LANES["keras@torch:cuda"].env["PYTORCH_NVML_BASED_CUDA_CHECK"] == "1"


def test_a_cell_importing_a_missing_module_is_not_applicable_not_an_error(tmp_path):
    root = write_content(tmp_path / "content", {"s.yaml": section(code_row("needs", "import no_such_module_xyz\nx = 1"), code_row("fine", "x = 1"))})
    verification = verify(content.load(root), cache=Cache(str(tmp_path / "cache")), cores=1, show_progress=False)
    assert verification.verdicts[("t", "needs", "pytorch")].status == NOT_APPLICABLE
    assert "imports no_such_module_xyz, which is not installed" in verification.verdicts[("t", "needs", "pytorch")].results[0][1].error
    assert verification.failures() == []


def test_imports_are_found_at_any_depth_and_only_imports_count():
    from generator.verify.verification import _imported

    code = """\
import a.b, c
from d.e import f
from . import local
def g():
    import h
class K:
    if True:
        from i import j
try:
    import k
except ImportError:
    import l
else:
    import m
finally:
    import n
with open(p) as q:
    for r in s:
        while t:
            import u
match v:
    case 1:
        import w
x = "import not_this"
"""
    assert _imported(code) == frozenset("a c d h i k l m n u w".split())
    assert _imported("def broken(:") == frozenset()


def test_the_driver_version_is_read_from_the_proc_line():
    # the worker's device module, loaded by its path as the worker (a directory python runs) has it
    spec = importlib.util.spec_from_file_location("worker_device", os.path.join(WORKER_SCRIPT, "device.py"))
    worker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(worker)
    line = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  (dvs-builder@U16)  Thu Sep 18 2025"
    assert worker.driver_version(line) == "580.95.05"
    assert worker.driver_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.12  Wed Aug 30 2023") == "535.104.12"


def test_gpu_evidence_decides_between_gpu_work_and_runs_anywhere():
    assert device_evidence({"torch_allocations": 12, "namespace_arrays": 0}) == (True, "12 CUDA allocations (torch)")
    assert device_evidence({"jax_live_arrays": 2}) == (True, "2 live JAX arrays on the GPU")
    used, detail = device_evidence({"torch_allocations": 0, "jax_live_arrays": 0, "namespace_arrays": 0})
    assert used is False and "runs anywhere" in detail


# A GPU machine writes its ledger with its own Python and framework builds: here, a separate
# process with every version read from metadata faked, as a CUDA image would report them.
WRITE_ELSEWHERE = r"""
import platform, sys
sys.path.insert(0, {root!r})
from generator.verify import cache
from generator.load import content
from generator.verify import ledger
from generator.model import Result
from generator.verify.verification import plan
from generator import versions
versions.package_version = lambda name: "9.9.9+cu130"
platform.python_version = lambda: "3.12.3"
sys.version = "3.12.3 (main) [GCC 13]"
jobs = plan(content.load({sample!r}), device="cuda", gpus=1)
results = {{job.id: Result(status="passed", duration=0.01, versions=cache.lane_versions(__import__("generator.lanes").lanes.LANES[job.lane]),
                           device="cuda: NVIDIA H100 80GB HBM3 (driver 580.95.05, CUDA 13.0)", date="2026-11-23", used_device=True,
                           detail="12 CUDA allocations (torch)") for job in jobs}}
ledger.write({path!r}, "nvidia-h100-80gb-hbm3", jobs, results)
print(sorted(job.key for job in jobs))
"""


def _verification(sheets, ledger_dir):
    jobs = plan(sheets)
    gpu_jobs = plan(sheets, device="cuda", gpus=8)
    results = {job.id: Result(status="passed", device="cpu: x", date="2026-01-02") for job in jobs}
    return Verification(None, judge(jobs, results), ledger.merge(ledger.load_all(ledger_dir), gpu_jobs), gpu_jobs)


def test_a_ledger_written_under_other_versions_counts_and_an_edited_cell_goes_stale(tmp_path):
    folder = tmp_path / "ledger"
    folder.mkdir()
    path = str(folder / "nvidia-h100-80gb-hbm3.json")
    script = WRITE_ELSEWHERE.format(root=ROOT, sample=SAMPLE, path=path)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    keys_there = set(json.loads(out.replace("'", '"')))
    sheets = content.load(SAMPLE)
    gpu_jobs = plan(sheets, device="cuda", gpus=1)
    assert keys_there.isdisjoint(job.key for job in gpu_jobs)  # the cache keys differ: they could never match
    entry = json.load(open(path))["entries"][0]
    assert entry["versions"]["python"] == "3.12.3" and "9.9.9+cu130" in entry["versions"].values()

    verification = _verification(sheets, str(folder))
    assert ledger.coverage(verification.gpu_jobs, verification.gpu) == (3, 3)
    run = verification.gpu[("golden", "ones", "pytorch")][0]
    assert run.counts and run.result.device.startswith("cuda: NVIDIA H100 80GB HBM3 (driver 580.95.05")

    copy = tmp_path / "content"
    shutil.copytree(SAMPLE, copy)
    section_file = copy / "golden" / "basics.yaml"
    section_file.write_text(section_file.read_text().replace("x = torch.ones(3)", "x = torch.ones(4)"))
    edited = _verification(content.load(str(copy)), str(folder))
    assert [run.stale for run in edited.gpu[("golden", "ones", "pytorch")]] == [True]
    assert ledger.coverage(edited.gpu_jobs, edited.gpu) == (2, 3)


def test_runs_anywhere_and_not_applicable_cells_leave_the_denominator(tmp_path):
    sheets = content.load(SAMPLE)
    gpu_jobs = plan(sheets, device="cuda", gpus=1)
    results = {}
    for job in gpu_jobs:
        if job.column == "jax":
            results[job.id] = Result(status=PASSED, used_device=False, device="cuda: G", date="2026-11-23")
        elif job.lane.startswith("keras@torch"):
            results[job.id] = Result(status=NOT_APPLICABLE, device="cuda", date="2026-11-23")
        else:
            results[job.id] = Result(status=PASSED, used_device=True, device="cuda: G", date="2026-11-23")
    ledger.write(str(tmp_path / "g.json"), "g", gpu_jobs, results)
    verification = _verification(sheets, str(tmp_path))
    counts = ledger.coverage_counts(verification.gpu_jobs, verification.gpu)
    assert counts == {"cells": 3, "passed": 2, "runs_anywhere": 1, "not_applicable": 0, "possible": 2}


def test_cpu_only_cells_stay_off_the_gpu_and_gpu_only_cells_off_the_cpu(tmp_path):
    rows = """\
      id: s
      title: S
      rows:
        - id: host
          title: host
          cells:
            pytorch:
              lanes: [torch]
              code: |
                x = 1
              cpu_only: needs the 8 host devices of the CPU lane
            jax: {text: x}
        - id: tf32
          title: tf32
          cells:
            pytorch:
              lanes: [torch]
              code: |
                x = 1
              gpu_only: TF32 exists only on NVIDIA GPUs
            jax: {text: x}
    """
    sheets = content.load(write_content(tmp_path, {"s.yaml": rows}))
    assert [job.row for job in plan(sheets)] == ["host"]
    assert [job.row for job in plan(sheets, device="cuda")] == ["tf32"]

