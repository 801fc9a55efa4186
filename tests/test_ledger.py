"""The GPU ledger: merging, staleness, coverage, and what the site shows. Ledgers here are written
by the tests themselves through the same writer a GPU run uses."""

from __future__ import annotations

import json
import os
import re
import shutil

import pytest

from generator.errors import ContentInvalid
from generator.lanes import LANES
from generator.load import content
from generator.model import Result
from generator.render import html as render
from generator.verify import ledger
from generator.verify.verification import Verification, judge, plan
from tests.conftest import ROOT

SAMPLE = os.path.join(ROOT, "tests", "samples", "golden")


def _gpu_result(status="passed"):
    return Result(status=status, duration=0.01, versions={"torch": "2.13.0"}, device="cuda: Test GPU (driver 1, CUDA 12)", date="2026-01-03")


def _verification(sheets, ledgers):
    jobs = plan(sheets)
    gpu_jobs = plan(sheets, device="cuda", gpus=8)
    results = {job.id: Result(status="passed", device="cpu: x", date="2026-01-02") for job in jobs}
    return Verification(None, judge(jobs, results), ledger.merge(ledgers, gpu_jobs), gpu_jobs)


def test_gpu_plan_takes_only_gpu_lanes():
    sheets = content.load(SAMPLE)
    lanes = {job.lane for job in plan(sheets, device="cuda", gpus=1)}
    assert lanes == {"torch:cuda", "keras@jax:cuda", "keras@torch:cuda", "jax:cuda"}
    assert LANES["jax:cuda"].env["JAX_PLATFORMS"].split(",")[0] == "cuda"  # the GPU first, the CPU for host callbacks
    # PyTorch's default device is the GPU in the PyTorch lanes only: Keras places its own tensors
    assert LANES["torch:cuda"].default_device == "cuda" and LANES["torch-dist:cuda"].default_device == "cuda"
    assert LANES["keras@torch:cuda"].default_device == "" and LANES["jax:cuda"].default_device == ""
    assert "xla_force_host_platform_device_count" not in LANES["jax:cuda"].env.get("XLA_FLAGS", "")
    assert "tensorflow:cuda" not in LANES and "torch:cuda" not in LANES  # content may not name them


def test_merge_counts_matching_entries_and_marks_edited_cells_stale(tmp_path):
    sheets = content.load(SAMPLE)
    gpu_jobs = plan(sheets, device="cuda", gpus=1)
    path = str(tmp_path / "ledger" / "test-gpu.json")
    ledger.write(path, "test-gpu", gpu_jobs, {job.id: _gpu_result() for job in gpu_jobs})
    ledgers = ledger.load_all(str(tmp_path / "ledger"))
    verification = _verification(sheets, ledgers)
    assert ledger.coverage(verification.gpu_jobs, verification.gpu) == (3, 3)

    copy = tmp_path / "content"
    shutil.copytree(SAMPLE, copy)
    section = copy / "golden" / "basics.yaml"
    section.write_text(section.read_text().replace("x = torch.ones(3)", "x = torch.ones(4)"))
    edited = _verification(content.load(str(copy)), ledgers)
    runs = edited.gpu[("golden", "ones", "pytorch")]
    assert [run.stale for run in runs] == [True]
    assert ledger.coverage(edited.gpu_jobs, edited.gpu) == (2, 3)


def test_failed_gpu_entry_does_not_count(tmp_path):
    sheets = content.load(SAMPLE)
    gpu_jobs = plan(sheets, device="cuda", gpus=1)
    results = {job.id: _gpu_result("failed" if job.column == "jax" else "passed") for job in gpu_jobs}
    ledger.write(str(tmp_path / "g.json"), "g", gpu_jobs, results)
    verification = _verification(sheets, ledger.load_all(str(tmp_path)))
    assert ledger.coverage(verification.gpu_jobs, verification.gpu) == (2, 3)


def test_rewriting_a_ledger_keeps_entries_of_cells_not_rerun(tmp_path):
    sheets = content.load(SAMPLE)
    gpu_jobs = plan(sheets, device="cuda", gpus=1)
    path = str(tmp_path / "g.json")
    ledger.write(path, "g", gpu_jobs, {job.id: _gpu_result() for job in gpu_jobs})
    one = [job for job in gpu_jobs if job.column == "jax"]
    ledger.write(path, "g", one, {job.id: _gpu_result("failed") for job in one})
    entries = json.load(open(path))["entries"]
    assert len(entries) == len(gpu_jobs)
    assert {e["column"]: e["status"] for e in entries}["jax"] == "failed"
    assert [e["id"] for e in entries] == sorted(e["id"] for e in entries)


def test_badge_and_report_show_gpu_and_stale(tmp_path):
    sheets = content.load(SAMPLE)
    gpu_jobs = plan(sheets, device="cuda", gpus=1)
    results = {job.id: _gpu_result() for job in gpu_jobs}
    ledger.write(str(tmp_path / "g.json"), "test-gpu", gpu_jobs, results)
    data = json.load(open(tmp_path / "g.json"))
    for entry in data["entries"]:
        if entry["column"] == "jax":
            entry["identity"] = "0" * 64  # as if the cell had changed since the GPU run
    json.dump(data, open(tmp_path / "g.json", "w"))
    files = render.render_site(sheets, _verification(sheets, ledger.load_all(str(tmp_path))))
    page = " ".join(re.sub(r"<[^>]+>", " ", files["golden.html"].decode()).split())  # the text a reader sees
    # A passed cell's runs load when its badge opens (data/<sheet>.runs.js); the summary says GPU.
    runs = json.loads(files["data/golden.runs.js"].decode().split(",", 1)[1].rsplit(")", 1)[0])
    opened = " ".join(re.sub(r"<[^>]+>", " ", " ".join(runs["ones"].values())).split())
    assert re.search(r"torch:cuda on test-gpu:? passed", opened)
    assert re.search(r"jax:cuda on test-gpu:? stale", opened)
    assert "✓ verified torch · GPU" in page and "on test-gpu" not in page
    assert "GPU: 2 of 3 cells that can run on a GPU passed there." in page
    assert "GPU coverage: 2 of 3" in files["index.html"].decode()
    gpu = json.loads(files["verification.json"])["gpu"]
    assert {(r["column"], r["status"]) for r in gpu} >= {("jax", "stale"), ("pytorch", "passed")}


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"format": 1, "machine": "g", "entries": [}', "invalid ledger JSON"),
        ('{"format": 2, "machine": "g", "entries": [{"id": "x"}]}', "malformed ledger: entry x lacks"),
        (
            '{"format": 2, "machine": "g", "entries": [{"id": "x", "sheet": "s", "row": "r", "column": "c", "lane": "jax", "identity": "i", "status": "ok"}]}',
            "malformed ledger: entry x: unknown status 'ok'",
        ),
        ("[]", "malformed ledger: expected an object with format 2"),
        ('{"format": 1, "machine": "g", "entries": []}', "malformed ledger: expected an object with format 2"),
    ],
)
def test_malformed_ledger_is_a_content_error(tmp_path, text, message):
    (tmp_path / "bad.json").write_text(text)
    with pytest.raises(ContentInvalid) as raised:
        ledger.load_all(str(tmp_path))
    assert message in raised.value.report() and "bad.json:1" in raised.value.report()


def test_an_unreadable_ledger_is_never_replaced_by_a_new_run(tmp_path):
    """Four entries and a merge-conflict marker: the next GPU run stops with the file and line instead
    of writing a ledger of its own entries only (a ledger costs a GPU run)."""
    sheets = content.load(SAMPLE)
    gpu_jobs = plan(sheets, device="cuda", gpus=1)
    path = tmp_path / "g.json"
    ledger.write(str(path), "g", gpu_jobs, {job.id: _gpu_result() for job in gpu_jobs})
    lines = path.read_text().splitlines(keepends=True)
    conflicted = "".join(lines[:5] + ["<<<<<<< HEAD\n"] + lines[5:])
    path.write_text(conflicted)
    one = gpu_jobs[:1]
    with pytest.raises(ContentInvalid) as raised:
        ledger.write(str(path), "g", one, {job.id: _gpu_result("failed") for job in one})
    assert f"{path}:6: invalid ledger JSON" in raised.value.report()
    assert path.read_text() == conflicted  # left as it was, for a person to resolve


def test_a_ledger_entry_with_a_null_identity_is_malformed_at_its_line(tmp_path):
    entry = {"id": "s/r/c@jax:cuda", "sheet": "s", "row": "r", "column": "c", "lane": "jax:cuda", "identity": None, "status": "passed"}
    (tmp_path / "bad.json").write_text(json.dumps({"format": 2, "machine": "g", "entries": [entry]}, indent=1, sort_keys=True))
    with pytest.raises(ContentInvalid) as raised:
        ledger.load_all(str(tmp_path))
    assert "bad.json:5: malformed ledger: entry s/r/c@jax:cuda lacks ['identity']" in raised.value.report()


def test_machine_name_is_a_slug():
    assert ledger.machine_name(" NVIDIA H100 80GB HBM3") == "nvidia-h100-80gb-hbm3"


def test_an_unknown_cuda_version_in_an_older_ledger_is_not_shown(tmp_path):
    sheets = content.load(SAMPLE)
    gpu_jobs = plan(sheets, device="cuda", gpus=1)
    unknown = Result(status="passed", duration=0.01, device="cuda: Test GPU (driver 1, CUDA ?)", date="2026-01-03", used_device=True)
    ledger.write(str(tmp_path / "g.json"), "g", gpu_jobs, {job.id: unknown for job in gpu_jobs})
    merged = ledger.merge(ledger.load_all(str(tmp_path)), gpu_jobs)
    assert {run.result.device for runs in merged.values() for run in runs} == {"cuda: Test GPU (driver 1)"}


@pytest.mark.parametrize(
    ("entry", "badge", "standing", "verified"),
    [
        (None, "awaiting a GPU run", "awaiting-gpu", 0),
        ({"used_device": True}, "✓ verified on a GPU torch · GPU", "passed", 1),
        # it read the GPU's properties: verified there by its check, but neither a green ✓ nor "· GPU"
        ({"used_device": False}, "passed on a GPU machine, no GPU work seen torch", "gpu-no-work", 1),
        ({"used_device": True, "status": "failed"}, "awaiting a GPU run", "awaiting-gpu", 0),
    ],
)
def test_a_gpu_only_cell_says_what_its_gpu_run_showed(tmp_path, entry, badge, standing, verified):
    from tests.conftest import write_content

    rows = """\
      id: s
      title: S
      rows:
        - id: kind
          title: kind
          cells:
            pytorch:
              lanes: [torch]
              code: |
                import torch
                name = torch.cuda.get_device_name()
              gpu_only: asks the GPU its name
            jax: {text: x}
    """
    sheets = content.load(write_content(tmp_path / "content", {"s.yaml": rows}))
    gpu_jobs = plan(sheets, device="cuda", gpus=1)
    if entry is not None:
        result = Result(status=entry.get("status", "passed"), duration=0.01, device="cuda: Test GPU (driver 1)", date="2026-01-03", used_device=entry["used_device"])
        ledger.write(str(tmp_path / "ledger" / "g.json"), "g", gpu_jobs, {job.id: result for job in gpu_jobs})
    merged = ledger.merge(ledger.load_all(str(tmp_path / "ledger")), gpu_jobs)
    verification = Verification(None, judge(plan(sheets), {}), merged, gpu_jobs)
    files = render.render_site(sheets, verification)
    page = " ".join(re.sub(r"<[^>]+>", " ", files["t.html"].decode()).split())
    assert badge in page
    assert ("awaiting a GPU run" in page) == (badge == "awaiting a GPU run")
    assert ("✓" in badge) == (standing == "passed") and ("· GPU" in page) == (standing == "passed")
    html = files["t.html"].decode()
    assert f'<details class="badge status-{standing}"' in html and f'class="cell kind-code status-{standing}"' in html
    # a GPU-only cell that passed there is a verified cell: counted so on its sheet and the index, its
    # runs load on opening, like the others'; one that awaits its run is not a failure (not red)
    assert f"{verified} of 1 code cells verified" in page
    index = files["index.html"].decode()
    assert f"{verified} / 1" in index and ('class="share incomplete"' in index) is False
    lazy = 'data-lazy="runs"' in html
    assert lazy == bool(verified)
    assert ("Test GPU" in files["data/t.runs.js"].decode()) == lazy


def test_a_gpu_run_with_an_unreadable_ledger_stops_before_running_anything(tmp_path, monkeypatch, capsys):
    from generator import cli
    from generator.verify import recorded

    root = tmp_path / "content"
    shutil.copytree(SAMPLE, root)
    (root / "ledger").mkdir()
    (root / "ledger" / "nvidia-h200.json").write_text('{"format": 2,\n<<<<<<< HEAD\n')
    monkeypatch.setattr(ledger, "gpu_count", lambda: 1)
    monkeypatch.setattr(recorded, "run_jobs", lambda *a, **k: pytest.fail("a job ran"))
    assert cli.main(["verify", "--device", "cuda", "--content", str(root), "--cache", str(tmp_path / "c"), "--quiet"]) == 2
    assert "nvidia-h200.json:2: invalid ledger JSON" in capsys.readouterr().err
    assert (root / "ledger" / "nvidia-h200.json").read_text() == '{"format": 2,\n<<<<<<< HEAD\n'
