"""Job identities follow what the code that runs and judges cells does, not how it is written: a
docstring or comment edit of the worker leaves every cache key and ledger entry valid, a change of
behaviour moves them all, and `ledger rekey` carries the committed entries over a digest change that
is not a change of behaviour."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from generator.load import content
from generator.model import Result
from generator.verify import cache as cache_module
from generator.verify import canonical, judge, ledger
from generator.verify.lane_worker import WORKER_SCRIPT
from generator.verify.verification import gpu_runs, plan
from tests.conftest import ROOT

SAMPLE = os.path.join(ROOT, "tests", "samples", "golden")


@pytest.fixture
def worker_copy(tmp_path, monkeypatch):
    """A copy of the worker that the identities are computed from, to edit."""
    folder = tmp_path / "worker"
    shutil.copytree(WORKER_SCRIPT, folder)
    monkeypatch.setattr(cache_module, "WORKER_SCRIPT", str(folder))
    cache_module.runner_code_hash.cache_clear()
    yield folder
    cache_module.runner_code_hash.cache_clear()


def _edit(path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def _identities(sheets) -> dict:
    return {job.id: (job.identity, job.key) for device in ("cpu", "cuda") for job in plan(sheets, device=device, gpus=8)}


def test_a_docstring_or_comment_edit_of_the_worker_leaves_every_entry_valid(worker_copy, tmp_path):
    sheets = content.load(SAMPLE)
    gpu_jobs = plan(sheets, device="cuda", gpus=1)
    folder = tmp_path / "ledger"
    ledger.write(str(folder / "g.json"), "g", gpu_jobs, {j.id: Result(status="passed", used_device=True) for j in gpu_jobs})
    before, digest = _identities(sheets), cache_module.runner_code_hash()

    _edit(worker_copy / "__main__.py", '"""A lane worker:', '"""A lane worker (reworded):')  # the module docstring
    _edit(worker_copy / "loop.py", "    def loop(self) -> None:\n", "    def loop(self) -> None:\n        # a comment\n        '''a docstring'''\n")
    _edit(worker_copy / "capture.py", "OUTPUT_CAP = 64 * 1024", "OUTPUT_CAP = 64 * 1024  # another comment")
    cache_module.runner_code_hash.cache_clear()
    assert cache_module.runner_code_hash() == digest
    assert _identities(sheets) == before
    gpu, jobs = gpu_runs(sheets, str(folder))
    assert ledger.coverage(jobs, gpu) == (3, 3)  # no entry went stale


def test_a_behaviour_change_of_the_worker_moves_every_identity(worker_copy):
    sheets = content.load(SAMPLE)
    before = _identities(sheets)
    _edit(worker_copy / "capture.py", "OUTPUT_CAP = 64 * 1024", "OUTPUT_CAP = 32 * 1024")
    cache_module.runner_code_hash.cache_clear()
    after = _identities(sheets)
    assert before.keys() == after.keys()
    assert all(after[job][0] != before[job][0] and after[job][1] != before[job][1] for job in before)


def test_a_new_module_of_the_worker_moves_every_identity(worker_copy):
    digest = cache_module.runner_code_hash()
    (worker_copy / "extra.py").write_text("X = 1\n")
    cache_module.runner_code_hash.cache_clear()
    assert cache_module.runner_code_hash() != digest


def test_the_judges_rules_hash_ignores_comments_and_docstrings(tmp_path):
    source = open(judge.__file__, encoding="utf-8").read()
    edited = source.replace('"""What a worker\'s result means', '"""What a result means (reworded)', 1) + "\n# a trailing comment\n"
    changed = source.replace("\"NameError\" not in raises", "\"NameErr0r\" not in raises", 1)
    assert edited != source and changed != source
    assert canonical.canonical(edited) == canonical.canonical(source)
    assert canonical.canonical(changed) != canonical.canonical(source)


def test_the_canonical_form_leaves_out_empty_fields_a_newer_python_adds():
    """A GPU machine's Python computes the same identities: fields that hold None or [] (as the ones a
    newer Python adds do, in code that does not use them) are not part of the form."""
    import ast

    tree = ast.parse("def f(x):\n    return x\n")
    plain = canonical._form(tree)
    tree.body[0].type_params_from_the_future = []
    tree.body[0]._fields = (*tree.body[0]._fields, "type_params_from_the_future")
    assert canonical._form(tree) == plain
    assert "lineno" not in plain and "FunctionDef(name='f'" in plain


def test_rekey_carries_entries_over_a_digest_change_and_leaves_stale_ones_stale(tmp_path, monkeypatch):
    """A ledger written under an old digest: `ledger rekey --from-runner OLD` makes the entries of
    unchanged cells current again, and an entry whose cell changed since stays stale."""
    from generator.cli import main

    root = tmp_path / "content"
    shutil.copytree(SAMPLE, root)
    (root / "ledger").mkdir()
    sheets = content.load(str(root))
    gpu_jobs = plan(sheets, device="cuda", gpus=1)
    old = "0" * 64
    monkeypatch.setattr(cache_module, "runner_code_hash", lambda: old)
    written = plan(sheets, device="cuda", gpus=1)  # the identities the old worker gave
    ledger.write(str(root / "ledger" / "g.json"), "g", written, {j.id: Result(status="passed", used_device=True) for j in written})
    monkeypatch.undo()
    data = json.loads((root / "ledger" / "g.json").read_text())
    stale = next(e for e in data["entries"] if e["column"] == "jax")
    stale["identity"] = "1" * 64  # as if the cell had changed too
    (root / "ledger" / "g.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    assert ledger.coverage(*reversed(gpu_runs(sheets, str(root / "ledger")))) == (0, 3)

    assert main(["ledger", "rekey", "--content", str(root), "--from-runner", old]) == 0
    after = json.loads((root / "ledger" / "g.json").read_text())
    current = {job.id: job.identity for job in gpu_jobs}
    assert {e["id"]: e["identity"] == current[e["id"]] for e in after["entries"]} == {e["id"]: e["column"] != "jax" for e in after["entries"]}
    assert ledger.coverage(*reversed(gpu_runs(sheets, str(root / "ledger")))) == (2, 3)
    assert [{k: v for k, v in e.items() if k != "identity"} for e in after["entries"]] == [
        {k: v for k, v in e.items() if k != "identity"} for e in data["entries"]
    ]  # nothing else moved


def test_rekey_touches_nothing_when_a_ledger_is_unreadable(tmp_path):
    from generator.cli import main

    root = tmp_path / "content"
    shutil.copytree(SAMPLE, root)
    (root / "versions").mkdir()
    (root / "versions" / "bad.json").write_text("<<<<<<< HEAD\n")
    assert main(["ledger", "rekey", "--content", str(root), "--from-runner", "0" * 64]) == 2
