"""Golden HTML: render the sample sheet with fixed results and compare with tests/golden/.

Regenerate after an intended change to the templates with `make golden` (python -m tests.golden).
"""

from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from generator.load import content  # noqa: E402
from generator.model import Result  # noqa: E402
from generator.render import html as render  # noqa: E402
from generator.verify.verification import Verification, judge, plan  # noqa: E402

SAMPLE = os.path.join("tests", "samples", "golden")
GOLDEN = os.path.join(ROOT, "tests", "golden")
COMPARED = ("index.html", "golden.html", "verification.html", "verification.json", "data/golden.json", "data/golden.csv")


def fixed_result(job) -> Result:
    """A deterministic result: everything passes but Keras on torch; the JAX cell's own code raises a
    deprecation warning, and one raised inside a framework's code reaches the PyTorch cell (not its own)."""
    failed = job.lane == "keras@torch"
    warnings = ()
    if job.column == "jax":
        warnings = ({"category": "DeprecationWarning", "message": "ones() is old", "where": f"{job.cell.source.path}:{job.cell.code.line}"},)
    elif job.column == "pytorch":
        warnings = ({"category": "DeprecationWarning", "message": "__array__ has no copy keyword", "where": "/venv/lib/python3.11/site-packages/torch/_tensor.py:1"},)
    return Result(
        status="failed" if failed else "passed",
        duration=0.25,
        stdout="hello <b>world</b>\n" if job.column == "pytorch" else "",
        error="Traceback (most recent call last):\nAssertionError: <script>" if failed else "",
        warnings=warnings,
        versions={"python": "3.11.7", "torch": "2.13.0", "jax": "0.10.2", "keras": "3.15.1"},
        device="cpu: Test CPU (2 cores)",
        date="2026-01-02",
    )


def render_sample() -> dict[str, bytes]:
    cwd = os.getcwd()
    os.chdir(ROOT)  # source paths in the output are relative to the repository
    try:
        sheets = content.load(SAMPLE)
        jobs = plan(sheets)
        verification = Verification(None, judge(jobs, {job.id: fixed_result(job) for job in jobs}))
        return render.render_site(sheets, verification)
    finally:
        os.chdir(cwd)


def regenerate() -> None:
    files = render_sample()
    for name in COMPARED:
        path = os.path.join(GOLDEN, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(files[name])
        print(f"wrote {os.path.relpath(path, ROOT)}")


if __name__ == "__main__":
    regenerate()
