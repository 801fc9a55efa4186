"""The code passes the project's linter (ruff, configured in pyproject.toml)."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import ROOT


def test_ruff_check():
    ruff = os.path.join(os.path.dirname(sys.executable), "ruff")
    proc = subprocess.run([ruff, "check", "generator", "tests"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
