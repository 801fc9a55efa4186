"""The GitHub workflows: actionlint passes, and pull requests run with no write access or secrets."""

from __future__ import annotations

import os
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
    assert "--changed-since" in runs and "make test" in runs and "make build" in runs
    assert "GITHUB_STEP_SUMMARY" in runs
    assert any(step.get("uses", "").startswith("actions/upload-artifact") for step in steps)


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
