"""The content rules beyond the schema (generator/contrib/rules.py) run where a contributor runs: `check`,
`verify --only`, the pre-commit hook and the pull-request workflow, each finding with file:line and the
fix; CONTRIBUTING.md states each rule. And a row id that names no row is an error with "did you mean"."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from generator.contrib import rules
from generator.load import content
from tests.conftest import ROOT, write_content

COLUMNS = (("pytorch", "torch"), ("jax", "python"))
ROWS = """\
id: s
title: S
rows:
  - id: to-numpy
    title: To NumPy
    notes: |
      Since TensorFlow {{version:tensorflow}} the same.
    cells:
      pytorch:
        code: |
          y = torch.ones(2).numpy()
        check: |
          assert y.shape == (2,)
      jax:
        code: |
          y = 1
  - id: fine
    title: Fine
    cells:
      pytorch:
        code: |
          y = torch.ones(2).cpu().numpy()
        check: |
          assert y.shape == (2,)
      jax: {text: fact}
"""


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "generator", *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_check_enforces_every_rule_with_file_line_and_the_fix(tmp_path):
    root = write_content(tmp_path / "content", {"s.yaml": ROWS}, columns=COLUMNS)
    path = os.path.join(root, "t", "s.yaml")
    proc = _cli("check", "--content", root)
    assert proc.returncode == 2, proc.stderr
    heads = [line for line in proc.stderr.splitlines() if line.startswith(path)]
    assert heads == [
        f"{path}:7: '{{{{version:tensorflow}}}}' names 'tensorflow', which is not installed here, so the page would say 'not installed' "
        "(did you mean 'tensorflow-cpu'?): name the distribution as installed (rule version-facts)",
        f"{path}:11: t/to-numpy [pytorch] can run on a GPU (lane torch): `.numpy()` on a tensor fails on CUDA: use `.cpu().numpy()` or "
        "`.numpy(force=True)`; or give the cell `cpu_only: <why>`, or end the line with `# gpu-ok: <why>` once checked (rule gpu-idioms)",
        f"{path}:15: t/to-numpy [jax] is code without a `check:`: add one that asserts what the row claims (a shape, a value computed "
        "independently, a default the notes name) (rule check-required)",
    ]
    assert "    11 |           y = torch.ones(2).numpy()" in proc.stderr  # the line itself, quoted


def test_verify_only_enforces_the_rules_for_its_rows_before_running_anything(tmp_path):
    root = write_content(tmp_path / "content", {"s.yaml": ROWS.replace("{{version:tensorflow}}", "{{version:numpy}}")}, columns=COLUMNS)
    proc = _cli("verify", "--content", root, "--cache", str(tmp_path / "cache"), "--only", "to-numpy", "--quiet")
    assert proc.returncode == 2 and "(rule gpu-idioms)" in proc.stderr and "(rule check-required)" in proc.stderr, proc.stderr
    assert not os.path.isdir(tmp_path / "cache" / "results")  # nothing ran
    found = rules.findings(root, content.load(root), only={"t/fine"})
    assert found == []  # the rows asked for, not the others


def test_the_real_content_keeps_every_rule():
    folder = os.path.join(ROOT, "content")
    found = rules.findings(folder, content.load(folder))
    assert found == [], "\n".join(error.format() for error in found)


def test_contributing_states_each_rule_and_the_hook_and_the_workflow_run_check():
    with open(os.path.join(ROOT, "CONTRIBUTING.md"), encoding="utf-8") as handle:
        guide = handle.read()
    listed = guide.split("<!-- rules: generated from generator/contrib/rules.py (a test checks) -->\n", 1)[1].split("<!-- /rules -->", 1)[0]
    assert listed == "".join(f"- {rule.line}\n" for rule in rules.RULES)
    with open(os.path.join(ROOT, ".pre-commit-config.yaml"), encoding="utf-8") as handle:
        assert "entry: .venv/bin/python -m generator check" in handle.read()
    with open(os.path.join(ROOT, ".github", "workflows", "pull-request.yml"), encoding="utf-8") as handle:
        workflow = handle.read()
    assert workflow.index(".venv/bin/python -m generator check") < workflow.index("generator verify --changed-since")


SAMPLE = os.path.join(ROOT, "tests", "samples", "golden")


@pytest.mark.parametrize("command", [
    ("verify", "--only", "onse"),
    ("build", "--only", "onse"),
    ("verify", "--explain", "onse"),
    ("mutate", "--only", "onse"),
    ("verify", "--only", "golden/onse"),
])  # fmt: skip
def test_an_unknown_row_id_is_an_error_with_did_you_mean(tmp_path, command):
    proc = _cli(*command, "--content", SAMPLE, "--cache", str(tmp_path / "cache"), *(("--out", str(tmp_path / "site")) if command[0] == "build" else ()))
    wanted = "golden/ones" if "/" in command[-1] else "ones"
    assert proc.returncode == 2, proc.stderr
    assert f"error: no row '{command[-1]}' in the content (did you mean '{wanted}'" in proc.stderr
    assert not os.path.isdir(tmp_path / "cache" / "results") and not os.path.exists(tmp_path / "site")


def test_make_verify_row_passes_the_id_on():
    with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as handle:
        makefile = handle.read()
    assert "$(PY) -m generator verify $(if $(ROW),--only $(ROW))" in makefile
