"""A contributor's first hour, scripted (issue 33): a row from `new-row` to a green `check` and `verify --only`,
through the mistakes newcomers make, each answered with a located message: a mistyped row id, a CPU-only
idiom in a cell that can run on a GPU, a version fact of a package not installed, an under-indented code
block, a duplicate key, a cell that never ends, a failed bare assert, a counterexample the check lets pass."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import ROOT, write_content

COLUMNS = (("pytorch", "torch"), ("numpy", "python"))

ROW = """\
  - id: cumulative-sum
    title: "Cumulative sum"
    notes: |
      Both keep the input's shape{notes}.
    cells:
      pytorch:
        setup: |
          import torch
        code: |
          y = torch.cumsum(torch.arange(4), dim=0){torch_tail}
        check: |
          assert y.tolist() == [0, 1, 3, 6]
      numpy:
        setup: |
          import numpy as np
        code: |
          y = np.cumsum(np.arange(4)){numpy_tail}
        check: |
          assert y.tolist() == {expected}
        counterexamples:
          - code: |
              y = {wrong}
            why: a running product is not a running sum
"""
GOOD = {"notes": "", "torch_tail": "", "numpy_tail": "", "expected": "[0, 1, 3, 6]", "wrong": "np.cumprod(np.arange(4))"}


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "generator", *map(str, args)], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_a_newcomer_adds_a_row_and_every_mistake_is_located(tmp_path):
    root = write_content(tmp_path / "content", {"basics.yaml": "id: basics\ntitle: Basics\nrows: []\n"}, columns=COLUMNS, sheet_id="sheet")
    cache = tmp_path / "cache"
    made = _cli("new-row", "--content", root, "sheet", "basics", "Cumulative sum")
    assert made.returncode == 0, made.stderr
    path = os.path.join(root, "sheet", "basics.yaml")
    assert f"{path}:4: added row 'cumulative-sum'" in made.stderr and "make verify ROW=cumulative-sum" in made.stderr
    assert _cli("check", "--content", root).returncode == 0  # placeholders are valid content (and fail verification)
    with open(path, encoding="utf-8") as handle:
        head = handle.read().split("  - id: cumulative-sum", 1)[0]

    def write(text: str) -> None:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(head + text)

    def verify():
        return _cli("verify", "--content", root, "--cache", cache, "--only", "cumulative-sum", "--quiet", "--jobs", "2")

    # a mistyped row id runs nothing and says which was meant
    typo = _cli("verify", "--content", root, "--cache", cache, "--only", "cumulative-sun", "--quiet")
    assert typo.returncode == 2 and "no row 'cumulative-sun' in the content (did you mean 'cumulative-sum'?)" in typo.stderr

    # rules check and verify enforce, with file:line and the fix
    write(ROW.format(**{**GOOD, "torch_tail": ".numpy()", "notes": " since TensorFlow {{version:tensorflow}}"}))
    for proc in (_cli("check", "--content", root), verify()):
        assert proc.returncode == 2, proc.stderr
        assert f"{path}:13: sheet/cumulative-sum [pytorch] can run on a GPU (lane torch): `.numpy()` on a tensor fails on CUDA: use `.cpu().numpy()`" in proc.stderr
        assert f"{path}:7: '{{{{version:tensorflow}}}}' names 'tensorflow', which is not installed here" in proc.stderr
        assert "(did you mean 'tensorflow-cpu'?)" in proc.stderr

    # YAML: the under-indented line itself, named as indentation; a duplicate key before what it causes
    write(ROW.format(**GOOD).replace("          y = np.cumsum(np.arange(4))\n", "          y = np.cumsum(np.arange(4))\n        z = y\n"))
    proc = _cli("check", "--content", root)
    assert proc.returncode == 2 and f"{path}:21: invalid YAML: indentation: line 21 is indented 8 spaces, less than the 10 of the block" in proc.stderr
    write(ROW.format(**GOOD).replace("    cells:\n      pytorch:", "    cells:\n      numpy: {text: first}\n    cells:\n      pytorch:"))
    errors = [line for line in _cli("check", "--content", root).stderr.splitlines() if line.startswith(path)]
    assert errors[0].startswith(f"{path}:10: duplicate key 'cells' (first defined on line 8)") and len(errors) > 1, errors

    # a cell that never ends: the line it was on, and the row's `timeout:`
    write(ROW.format(**{**GOOD, "numpy_tail": "\n          while y.sum():\n              y = y + 1"}).replace("    notes:", "    timeout: 2\n    notes:", 1))
    proc = verify()
    assert proc.returncode == 1
    # killed in the loop: on its test (line 22) or its body (line 23), wherever the sample found it
    assert any(f"{path}:{line}: the cell ran past its timeout of 2 s (the row's `timeout:`) and was killed here" in proc.stderr for line in (22, 23)), proc.stderr
    assert "`timeout: SECONDS` on the row" in proc.stderr

    # a failed bare assert shows the values it compared
    write(ROW.format(**{**GOOD, "expected": "[0, 1, 2, 3]"}))
    proc = verify()
    assert proc.returncode == 1 and "The assertion compared (evaluated again after it failed):\n  y.tolist() = [0, 1, 3, 6]" in proc.stderr, proc.stderr

    # a counterexample the check lets pass: where it is, and what that means
    write(ROW.format(**{**GOOD, "wrong": "np.cumsum(np.arange(4))"}))
    proc = verify()
    assert proc.returncode == 1
    assert (f"FAILED: {path}:25: counterexample 1 of sheet/cumulative-sum [numpy] passed the check in lane python: the check is too weak, "
            "or this snippet is not wrong") in proc.stderr  # fmt: skip

    # and green
    write(ROW.format(**GOOD))
    assert _cli("check", "--content", root).returncode == 0
    proc = verify()
    assert proc.returncode == 0, proc.stderr
