"""Runtime failures are located like content errors: a timeout names the YAML file:line the cell was on
when it was killed (a stack sample read before the kill) and the row's `timeout:`; a failed bare
`assert a == b` shows a and b; a counterexample that passes names its file:line and says what it means."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import ROOT, code_row, section, write_content


def _verify(tmp_path, *rows: str):
    root = write_content(tmp_path / "content", {"s.yaml": section(*rows)})
    proc = subprocess.run([sys.executable, "-m", "generator", "verify", "--content", root, "--cache", str(tmp_path / "cache"), "--quiet", "--jobs", "2"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)  # fmt: skip
    return os.path.join(root, "t", "s.yaml"), proc


def test_a_timeout_names_the_line_it_was_on_and_the_rows_timeout(run_rows, tmp_path):
    # lines of s.yaml: 11 `import time`, 12 `def spin():` ... 15 `n += 1`, 16 `spin()`
    row = code_row("endless", "import time\ndef spin():\n    n = 0\n    while True:\n        n += 1\nspin()", "assert True", timeout=1)
    result = run_rows(row)["endless"]
    path = os.path.join(tmp_path, "content", "t", "s.yaml")
    assert result.status == "timeout"
    # killed in the loop: on its test (line 14) or its body (line 15), wherever the sample found it
    line = 14 if result.error.startswith(f"{path}:14: ") else 15
    assert result.error.startswith(f"{path}:{line}: the cell ran past its timeout of 1 s (the row's `timeout:`) and was killed here\n"), result.error
    # the stack sampled before the kill, the worker's own frames left out
    assert result.error.endswith(f'(most recent call last):\n  File "{path}", line 16, in <module>\n  File "{path}", line {line}, in spin'), result.error


def test_a_timeout_in_a_native_call_names_the_line_that_made_it(run_rows, tmp_path):
    result = run_rows(code_row("sleeper", "import time\nx = 1\ntime.sleep(600)", "assert x", timeout=1))["sleeper"]
    assert result.status == "timeout" and result.error.startswith(f"{tmp_path}/content/t/s.yaml:13: the cell ran past"), result.error


def test_the_report_of_a_timeout_says_how_a_row_asks_for_longer(tmp_path):
    _, proc = _verify(tmp_path, code_row("endless", "while True:\n    pass", "assert True", timeout=1))
    assert proc.returncode == 1
    assert "(a row that needs longer says so: `timeout: SECONDS` on the row, beside its `id:`; the default is 60 s)" in proc.stderr


def test_a_failed_bare_assert_shows_the_values_it_compared(run_rows):
    result = run_rows(code_row("r", "y = [1, 2]\nshape = (2, 3)", "assert len(y) == 3\n", ),
                      code_row("call", "import math\na, b = 1.0, 1.5", "assert math.isclose(a, b, rel_tol=1e-3)"))  # fmt: skip
    assert result["r"].status == "failed"
    assert result["r"].error.endswith("AssertionError\nThe assertion compared (evaluated again after it failed):\n  len(y) = 2\n"), result["r"].error
    assert "  a = 1.0\n  b = 1.5\n" in result["call"].error and "1e-3 =" not in result["call"].error


def test_an_assert_with_a_message_keeps_it_alone(run_rows):
    result = run_rows(code_row("r", "y = 2", "assert y == 3, 'y is wrong'"))["r"]
    assert result.error.rstrip().endswith("AssertionError: y is wrong")


PASSING_COUNTEREXAMPLE = """\
  - id: weak
    title: weak
    cells:
      pytorch:
        lanes: [python]
        code: |
          y = 2
        check: |
          assert y > 0
        counterexamples:
          - code: |
              y = 3
            why: three is not two
      jax: {text: fact}
"""


def test_a_counterexample_that_passes_names_its_file_line_and_what_it_means(tmp_path):
    path, proc = _verify(tmp_path, PASSING_COUNTEREXAMPLE)
    assert proc.returncode == 1
    assert (f"FAILED: {path}:15: counterexample 1 of t/weak [pytorch] passed the check in lane python: the check is too weak, "
            "or this snippet is not wrong") in proc.stderr  # fmt: skip


def test_without_a_readable_process_the_timeout_says_there_is_no_sample():
    """The sampler's fallback: a process it cannot read (here: one that has exited and been reaped) gives no
    location and says why, instead of failing the worker."""
    sys.path.insert(0, os.path.join(ROOT, "generator", "verify", "worker"))
    try:
        import sample
    finally:
        sys.path.pop(0)
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    at, said = sample.where(child.pid, "/nowhere.py", "content/x.yaml")
    assert at == "" and said.startswith("no stack sample: "), said
