"""The guide and the trade-off matrix: strict loading, and no evidence link may point at nothing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from generator.errors import ContentInvalid
from generator.load import content, pages
from tests.conftest import ROOT

CONTENT = os.path.join(ROOT, "content")


def test_real_guide_and_matrix_load_with_every_evidence_link_resolved():
    loaded = pages.load(CONTENT, content.load(CONTENT))
    assert loaded["guide"]["sections"] and loaded["tradeoffs"]["sections"]
    links = [link for s in loaded["guide"]["sections"] for item in s["items"] for link in item["evidence"]]
    links += [link for s in loaded["tradeoffs"]["sections"] for c in s["criteria"] for v in c["verdicts"] for link in v["evidence"]]
    assert links and all(link.href for link in links)
    speed = [item for s in loaded["guide"]["sections"] for item in s["items"] if "faster" in item["text"].lower()]
    assert speed and all(any(link.kind == "benchmark" for link in item["evidence"]) for item in speed)


MINIMAL_TRADEOFFS = """\
title: T
frameworks:
  - {id: pytorch, name: PyTorch}
sections:
  - id: s
    title: S
    criteria:
      - id: c
        label: C
        verdicts:
          - framework: pytorch
            verdict: good
            reason: fine
            evidence:
              - row: golden/no-such-row
              - benchmark: mlp-train-stepp
              - {url: "http://example.org", title: X, accessed: "2026-01-01"}
"""


def _sample(tmp_path, tradeoffs: str) -> str:
    root = tmp_path / "content"
    shutil.copytree(os.path.join(ROOT, "tests", "samples", "golden"), root)
    (root / "tradeoffs.yaml").write_text(tradeoffs)
    return str(root)


def test_broken_evidence_fails_with_file_and_line(tmp_path):
    root = _sample(tmp_path, MINIMAL_TRADEOFFS)
    with pytest.raises(ContentInvalid) as raised:
        pages.load(root, content.load(root))
    path = os.path.join(root, "tradeoffs.yaml")
    assert [e.format().split("\n")[0] for e in raised.value.errors] == [
        f"{path}:15: evidence points at a missing row 'golden/no-such-row' (did you mean 'golden/ones'?)",
        f"{path}:16: unknown benchmark 'mlp-train-stepp' (did you mean 'mlp-train-step'?)",
        f"{path}:17: an external source must be an https URL: 'http://example.org'",
    ]
    proc = subprocess.run([sys.executable, "-m", "generator", "check", "--content", root], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2 and "missing row 'golden/no-such-row'" in proc.stderr


def test_verdicts_must_cover_every_framework_in_order(tmp_path):
    text = MINIMAL_TRADEOFFS.replace("  - {id: pytorch, name: PyTorch}\n", "  - {id: pytorch, name: PyTorch}\n  - {id: jax, name: JAX}\n")
    text = text.replace("              - row: golden/no-such-row\n              - benchmark: mlp-train-stepp\n              - {url: \"http://example.org\", title: X, accessed: \"2026-01-01\"}\n", "              - row: golden/ones\n")
    root = _sample(tmp_path, text)
    with pytest.raises(ContentInvalid) as raised:
        pages.load(root, content.load(root))
    assert "verdicts must be one per framework in the order ['pytorch', 'jax']; got ['pytorch']" in raised.value.report()


def test_guide_selector_scores_are_complete(tmp_path):
    root = _sample(tmp_path, MINIMAL_TRADEOFFS.replace("row: golden/no-such-row", "row: golden/ones").replace("              - benchmark: mlp-train-stepp\n", "").replace("http://", "https://"))
    (tmp_path / "content" / "guide.yaml").write_text(
        "title: G\nsections:\n  - id: s\n    title: S\n    items:\n      - text: t\n        evidence: [{row: golden/ones}]\n"
        "selector:\n  criteria:\n    - {id: a, label: A}\n    - {id: b, label: B}\n"
        "  frameworks:\n    - id: pytorch\n      name: PyTorch\n      scores:\n        - {criterion: a, score: 4, reason: r}\n"
    )
    with pytest.raises(ContentInvalid) as raised:
        pages.load(root, content.load(root))
    report = raised.value.report()
    assert "'score' must be an integer from 0 to 3" in report
    assert "no score for criteria ['b']" in report


def test_a_speed_statement_without_a_benchmark_is_an_error_in_check(tmp_path):
    """The rule the real guide's test asserted (speed statements link a benchmark) is check's, with file:line."""
    root = _sample(tmp_path, MINIMAL_TRADEOFFS.replace("row: golden/no-such-row", "row: golden/ones").replace("              - benchmark: mlp-train-stepp\n", "").replace("http://", "https://"))
    (tmp_path / "content" / "guide.yaml").write_text(
        "title: G\nsections:\n  - id: s\n    title: S\n    items:\n      - text: JAX is faster here\n        evidence: [{row: golden/ones}]\n"
        "      - text: JAX is faster there\n        evidence: [{row: golden/ones}, {benchmark: mlp-train-step}]\n"
    )
    proc = subprocess.run([sys.executable, "-m", "generator", "check", "--content", root], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2
    assert f"{root}/guide.yaml:6: a statement about speed links the benchmark that measured it: add `- benchmark: ID`" in proc.stderr
    assert ":8: a statement about speed" not in proc.stderr
