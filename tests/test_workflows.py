"""The GitHub workflows: actionlint passes, and pull requests run with no write access or secrets."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import yaml

from tests.conftest import ROOT

WORKFLOWS = os.path.join(ROOT, ".github", "workflows")


def _load(name):
    with open(os.path.join(WORKFLOWS, name), encoding="utf-8") as handle:
        return yaml.load(handle, Loader=yaml.BaseLoader)  # BaseLoader: 'on' stays a string key


def test_actionlint_passes():
    actionlint = os.path.join(os.path.dirname(sys.executable), "actionlint")
    proc = subprocess.run([actionlint, "-color=false"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_pull_requests_are_read_only_and_secret_free():
    flow = _load("pull-request.yml")
    assert flow["permissions"] == {"contents": "read"}
    text = open(os.path.join(WORKFLOWS, "pull-request.yml"), encoding="utf-8").read()
    assert "secrets." not in text and "pull_request_target" not in text
    steps = flow["jobs"]["verify"]["steps"]
    runs = " ".join(step.get("run", "") for step in steps)
    assert "--changed-since" in runs and "make build" in runs
    assert "GITHUB_STEP_SUMMARY" in runs
    assert any(step.get("uses", "").startswith("actions/upload-artifact") for step in steps)


def _marker_expressions(flow) -> dict[str, str]:
    """{job: the -m expression its pytest runs with} (make test-fast's, for a job that runs it)."""
    with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as handle:
        fast = re.search(r'^test-fast:.*\n\t.*pytest -m "([^"]+)"', handle.read(), re.M).group(1)
    found = {}
    for name, job in flow["jobs"].items():
        for step in job["steps"]:
            run = step.get("run", "")
            match = re.search(r'pytest -m "([^"]+)"', run)
            if match:
                found[name] = match.group(1)
            if "make test-fast" in run:
                found[name] = fast
    return found


def test_the_jobs_run_every_test_group_exactly_once():
    """Every combination of markers a test can have is selected by exactly one job: nothing is left out of CI."""
    expressions = _marker_expressions(_load("pull-request.yml"))
    assert set(expressions) == {"fast", "verify", "browser", "bench"}
    kinds = [set(), {"content"}, {"browser"}, {"content", "browser"}, {"content", "bench"}]
    for markers in kinds:
        env = {name: name in markers for name in ("content", "browser", "bench")}
        selected = [job for job, expr in expressions.items() if eval(expr, {}, env)]  # noqa: S307 - our own file
        assert len(selected) == 1, f"a test marked {sorted(markers)} runs in {selected}"


def test_ci_caches_the_results_keyed_by_the_lock_file():
    for name in ("pull-request.yml", "pages.yml"):
        flow = _load(name)
        caches = [step for job in flow["jobs"].values() for step in job["steps"] if step.get("uses", "").startswith("actions/cache")]
        assert caches, f"{name} restores no cache"
        for step in caches:
            assert step["with"]["path"] == ".cache/results"
            assert "hashFiles('requirements.lock')" in step["with"]["key"]
    browser = _load("pull-request.yml")["jobs"]["browser"]
    assert browser["needs"] == "verify"  # restores what the verify job saved


def test_pages_deploys_from_main_and_gpu_uploads_the_ledger():
    pages = _load("pages.yml")
    assert pages["on"]["push"]["branches"] == ["main"]
    assert pages["jobs"]["deploy"]["permissions"] == {"pages": "write", "id-token": "write"}
    gpu = _load("gpu.yml")
    assert "workflow_dispatch" in gpu["on"]
    job = gpu["jobs"]["verify-gpu"]
    assert "self-hosted" in job["runs-on"]
    assert "--device cuda" in " ".join(step.get("run", "") for step in job["steps"])
    assert any("content/ledger/*.json" in step.get("with", {}).get("path", "").split() for step in job["steps"])
    assert "make venv" not in " ".join(step.get("run", "") for step in job["steps"])  # the CPU lock's torch is the wrong build there


def test_sharded_pages_verifies_a_matrix_and_merges_before_it_publishes():
    flow = _load("pages-sharded.yml")
    jobs = flow["jobs"]
    assert flow["permissions"] == {"contents": "read"} and flow["concurrency"]["group"] == "pages"
    assert "fromJSON(needs.plan.outputs.shards)" in jobs["verify"]["strategy"]["matrix"]["shard"]
    verify_runs = " ".join(step.get("run", "") for step in jobs["verify"]["steps"])
    assert "--shard" in verify_runs and "--timings shard-plan/timings.json" in verify_runs  # one file for all shards
    uploads = [step for step in jobs["verify"]["steps"] if step.get("uses", "").startswith("actions/upload-artifact")]
    assert uploads and uploads[0]["if"] == "always()"  # a failed shard's bundle still reaches the merge, which names it
    build_runs = " ".join(step.get("run", "") for step in jobs["build"]["steps"])
    assert "build --merge" in build_runs and "make build" not in build_runs
    assert jobs["deploy"]["needs"] == "build" and jobs["deploy"]["permissions"] == {"pages": "write", "id-token": "write"}


def test_drift_is_scheduled_unpinned_and_never_publishes():
    flow = _load("drift.yml")
    assert "schedule" in flow["on"] and "workflow_dispatch" in flow["on"]
    assert flow["permissions"] == {"contents": "read"}
    text = open(os.path.join(WORKFLOWS, "drift.yml"), encoding="utf-8").read()
    assert "pages" not in text.replace("GITHUB_STEP_SUMMARY", "") and "deploy" not in text
    assert "-r requirements" not in text and "-c requirements" not in text  # no lock installed or used as constraints
    assert "make venv" not in text
    runs = " ".join(step.get("run", "") for job in flow["jobs"].values() for step in job["steps"])
    assert '--index-url "$TORCH_INDEX" torch' in runs and "pyproject.toml" in runs
    assert "--summary" in runs and "GITHUB_STEP_SUMMARY" in runs
