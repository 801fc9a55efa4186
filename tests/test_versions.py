"""Older releases (docs/versions.md), tested without one: `verify --environment` run by the main
interpreter with the versions it records faked, as an older environment would report them. The
file it writes gives each cell its verified range; a failure names the release and its error; an
edited cell's entries go stale and stop counting."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys

import pytest

from generator.load import content
from generator.model import FAILED, PASSED, Result
from generator.render import html as render
from generator.render import releases
from generator.verify import environments, ledger
from generator.verify.judge import error_line
from generator.verify.verification import Verification, judge, plan
from tests.conftest import ROOT

SAMPLE = os.path.join(ROOT, "tests", "samples", "golden")
OLD = {"jax": "0.8.3", "jaxlib": "0.8.3", "flax": "0.12.2", "optax": "0.2.6"}

# The environment's run, in its own process: the environment file's folder moved to the test's,
# every version read from metadata faked for the overridden packages (the pins then match, so the
# guard lets it run), the cells run for real by the main interpreter's workers.
RUN_OLD = r"""
import sys
sys.path.insert(0, {root!r})
from generator import cli
from generator import versions
from generator.verify import environments
environments.FOLDER = {folder!r}
real = versions.package_version
versions.package_version = lambda name: {old!r}.get(name) or real(name)
sys.exit(cli.main(["verify", "--environment", "jax-0.8", "--content", {content!r}, "--cache", {cache!r}, "--jobs", "2", "--quiet"]))
"""


def _environment(tmp_path) -> str:
    folder = tmp_path / "environments"
    folder.mkdir()
    (folder / "jax-0.8.txt").write_text("# an older JAX\n# lanes: jax keras@jax\n" + "".join(f"{n}=={v}\n" for n, v in OLD.items()))
    return str(folder)


def _pinned(sheets, versions_dir) -> Verification:
    """The pinned run faked: every job passed with the lock's versions."""
    jobs = plan(sheets)
    lock = {"python": "3.11.7", "jax": "0.10.2", "jaxlib": "0.10.2", "flax": "0.12.8", "optax": "0.2.8", "keras": "3.15.1", "tensorflow-cpu": "2.21.0", "torch": "2.13.0+cpu"}
    results = {job.id: Result(status=PASSED, versions=lock, device="cpu: x", date="2026-11-23") for job in jobs}
    return Verification(None, judge(jobs, results), versions=environments.runs(jobs, versions_dir))


@pytest.fixture(scope="module")
def old_run(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("versions")
    copy = tmp_path / "content"
    shutil.copytree(SAMPLE, copy)
    script = RUN_OLD.format(root=ROOT, folder=_environment(tmp_path), old=OLD, content=str(copy), cache=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    return copy, done.stderr


def test_an_environment_run_records_its_versions_and_only_its_lanes(old_run):
    copy, stderr = old_run
    data = json.load(open(copy / "versions" / "jax-0.8.json"))
    assert data["machine"] == "jax-0.8"
    assert {e["lane"] for e in data["entries"]} == {"jax", "keras@jax"}  # not torch, not keras@torch
    assert all(e["versions"]["jax"] == "0.8.3" and e["status"] == PASSED for e in data["entries"])
    assert not any("!not" in e["id"] for e in data["entries"])  # counterexamples test the check, not a release
    assert "environment jax-0.8" in stderr and "| jax | 1 | 0 |" in stderr


def test_the_range_is_shown_in_the_badge_and_in_the_exports(old_run):
    copy, _ = old_run
    sheets = content.load(str(copy))
    verification = _pinned(sheets, str(copy / "versions"))
    files = render.render_site(sheets, verification)
    # in the badge's runs (they load on opening it): the summary line keeps to the verdict and what fails
    page = _page_with_runs(files)
    assert '<dd class="range">passes on jax 0.8.3–0.10.2 · flax 0.12.2–0.12.8 · optax 0.2.6–0.2.8</dd>' in page  # the JAX cell
    assert '<dd class="range">passes on jax 0.8.3–0.10.2</dd>' in page  # the Keras cell: keras@jax moved only jax
    assert "0.8.3–0.10.2" not in files["golden.html"].decode()
    export = json.loads(files["data/golden.json"])
    cell = export["sections"][0]["rows"][0]["cells"]["jax"]
    assert {"package": "jax", "min": "0.8.3", "max": "0.10.2"} in cell["releases"]["ranges"] and cell["releases"]["failures"] == []
    report = json.loads(files["verification.json"])
    assert report["environments"][0]["environment"] == "jax-0.8" and report["environments"][0]["passed"] == 2
    assert report["environments"][0]["version_text"] == "flax 0.12.2 · jax 0.8.3 · optax 0.2.6"  # only what it moved
    assert '<table class="report" id="environments">' in files["verification.html"].decode()


def _page_with_runs(files: dict) -> str:
    """The sheet page and the badge runs it loads on opening (data/golden.runs.js: a passed cell's
    runs, older-release failures included, are not in the page itself)."""
    text = files["data/golden.runs.js"].decode()
    runs = json.loads(text[text.index(",") + 1 : text.rindex(")")])
    return files["golden.html"].decode() + "".join(html for row in runs.values() for html in row.values())


def _cell(sheets, row: str, column: str):
    return next(c for s in sheets for r in s.rows() if r.id == row for c in r.cells if c.column == column)


def test_a_failure_names_the_release_the_part_that_failed_and_the_error(tmp_path):
    sheets = content.load(SAMPLE)
    cell = _cell(sheets, "ones", "jax")
    jobs = [job for job in plan(sheets) if job.lane == "jax" and not job.counterexample]
    # the traceback's innermost frame in the cell's own file is on a line of its code: the code failed
    error = (
        f'Traceback (most recent call last):\n  File "{cell.source.path}", line {cell.code.line}, in <module>\n    x = jnp.ones(3)\n'
        '  File "/venv/lib/python3.11/site-packages/jax/_src/numpy/lax_numpy.py", line 9, in ones\n'
        "AttributeError: module 'jax' has no attribute 'shard_map'\n"
    )
    results = {job.id: Result(status=FAILED, error=error, versions={"python": "3.11.7", **OLD, "numpy": "2.4.6"}) for job in jobs}
    ledger.write(str(tmp_path / "jax-0.8.json"), "jax-0.8", jobs, results)
    verification = _pinned(sheets, str(tmp_path))
    view = releases.cell_versions(verification, ("golden", "ones", "jax"), cell)
    assert view["range"] == "" and view["failures"] == [
        {"environment": "jax-0.8", "lane": "jax", "release": "jax 0.8.3", "error": "AttributeError: module 'jax' has no attribute 'shard_map'", "stage": "code"}
    ]
    files = render.render_site(sheets, verification)
    page = _page_with_runs(files)
    assert "jax 0.8.3: code fails (the code itself raised): <code>AttributeError: module &#39;jax&#39; has no attribute &#39;shard_map&#39;</code>" in page
    assert '<span class="range-fail">✗ jax 0.8.3: code fails</span>' in page
    assert releases.environment_table(verification)[0]["failed"] == 1
    exported = json.loads(files["data/golden.json"])["sections"][0]["rows"][0]["cells"]["jax"]["releases"]
    assert exported["failures"][0]["stage"] == "code" and [r["status"] for r in exported["runs"]] == ["failed"]
    # a second older release where the code runs but the check rejects what it computed: said so
    check_error = f'Traceback (most recent call last):\n  File "{cell.source.path}", line {cell.code.line + 50}, in <module>\nAssertionError\n'
    newer = {job_id: dataclasses.replace(result, error=check_error, versions={**result.versions, "jax": "0.9.2"}) for job_id, result in results.items()}
    ledger.write(str(tmp_path / "jax-0.9.json"), "jax-0.9", jobs, newer)
    page = _page_with_runs(render.render_site(sheets, _pinned(sheets, str(tmp_path))))
    assert '<span class="range-fail">✗ jax 0.8.3: code fails; jax 0.9.2: fails</span>' in page  # line 50 past the code: not the cell's
    assert releases.failed_stage(cell, check_error.replace(str(cell.code.line + 50), str(cell.code.line))) == "code"
    # the same error in two releases: one line naming both, oldest first
    same = {job_id: dataclasses.replace(result, versions={**result.versions, "jax": "0.9.2"}) for job_id, result in results.items()}
    ledger.write(str(tmp_path / "jax-0.9.json"), "jax-0.9", jobs, same)
    page = _page_with_runs(render.render_site(sheets, _pinned(sheets, str(tmp_path))))
    assert "jax 0.8.3, jax 0.9.2: code fails" in page and '<span class="range-fail">✗ jax 0.8.3, jax 0.9.2: code fails</span>' in page


def test_a_failure_in_the_check_is_told_from_one_in_the_code():
    from generator.model import Cell, Snippet, Source

    cell = Cell("jax", "code", Source("content/a/b.yaml", 3), code=Snippet("x = f()\ny = g(x)\n", 5), setup=Snippet("import f\n", 3), check=Snippet("assert y == 1\n", 8))
    frame = 'Traceback (most recent call last):\n  File "content/a/b.yaml", line {}, in <module>\n'
    assert releases.failed_stage(cell, frame.format(3) + "ImportError") == "setup"
    assert releases.failed_stage(cell, frame.format(6) + '  File "/x/site-packages/jax/y.py", line 1\nTypeError') == "code"
    assert releases.failed_stage(cell, frame.format(8) + "AssertionError") == "check"
    assert releases.failed_stage(cell, '  File "/x/site-packages/jax/y.py", line 1\nTypeError') == ""  # cut short: not said


def test_an_edited_cell_s_entries_go_stale(old_run, tmp_path):
    copy, _ = old_run
    edited = tmp_path / "content"
    shutil.copytree(copy, edited)
    section_file = edited / "golden" / "basics.yaml"
    section_file.write_text(section_file.read_text().replace("x = jnp.ones(3)", "x = jnp.ones(4)"))
    sheets = content.load(str(edited))
    verification = _pinned(sheets, str(edited / "versions"))
    view = releases.cell_versions(verification, ("golden", "ones", "jax"))
    assert view["stale"] == 1 and view["range"] == ""  # the old run no longer counts
    assert releases.cell_versions(verification, ("golden", "ones", "keras"))["range"] == "jax 0.8.3–0.10.2"  # untouched
    assert [e["stale"] for e in releases.environment_table(verification)] == [1]


def test_the_requirements_replace_the_lock_lines_they_name(tmp_path):
    env = environments.load_environment("jax-0.8", _environment(tmp_path))
    text = environments.requirements(env, os.path.join(ROOT, "requirements.lock"))
    assert "jax==0.8.3" in text.splitlines() and "jax==0.10.2" not in text and "flax==0.12.8" not in text
    assert "keras==3.15.1" in text and "torch" not in text  # the rest of the lock; torch comes first, from its own index
    with pytest.raises(ValueError, match="lanes"):
        (tmp_path / "environments" / "bad.txt").write_text("jax==0.8.3\n")
        environments.load_environment("bad", str(tmp_path / "environments"))


def test_a_bare_assertion_is_named_with_its_line():
    error = 'Traceback (most recent call last):\n  File "devices.yaml", line 57, in <module>\n    assert str(x.device) == "cpu:0"\n           ^^^^^^^^^^^^\nAssertionError\n'
    assert error_line(error) == 'AssertionError at: assert str(x.device) == "cpu:0"'
    assert error_line("Traceback\nValueError: bad shape") == "ValueError: bad shape"


def test_the_wrong_interpreter_is_refused_before_anything_runs(tmp_path, monkeypatch, capsys):
    from generator import cli

    monkeypatch.setattr(environments, "FOLDER", _environment(tmp_path))
    assert cli.main(["verify", "--environment", "jax-0.8", "--content", SAMPLE, "--cache", str(tmp_path / "c")]) == 2
    assert "make verify-env ENV=jax-0.8" in capsys.readouterr().err
    assert not os.path.exists(os.path.join(SAMPLE, "versions"))
    assert cli.main(["verify", "--environment", "nope", "--content", SAMPLE]) == 2  # unknown: named, with the known ones
    assert "known: jax-0.8" in capsys.readouterr().err
    onnx = ('Traceback (most recent call last):\n  File "export.yaml", line 491, in <module>\n    (y,) = sess.run(None, feed)\n'
            '  File "/x/onnxruntime/session.py", line 395, in run\n    return self._sess.run(output_names, input_feed)\n'
            "           ^^^^^^^^^^^^\nInvalidArgument: [ONNXRuntimeError] : 2 : Got invalid dimensions\n index: 0 Got: 5 Expected: 1\n Please fix the model.\n")  # fmt: skip
    assert error_line(onnx) == "InvalidArgument: [ONNXRuntimeError] : 2 : Got invalid dimensions"  # the exception, not its tail


def test_an_environment_that_fails_one_lane_of_a_cell_is_not_in_its_range(tmp_path):
    sheets = content.load(SAMPLE)
    jobs = [job for job in plan(sheets) if job.column == "keras" and not job.counterexample]
    old = {"python": "3.11.7", "keras": "3.13.2", "jax": "0.10.2", "torch": "2.13.0+cpu", "tensorflow-cpu": "2.21.0"}
    error = "Traceback (most recent call last):\nValueError: Unrecognized format=torch."
    results = {job.id: Result(status=FAILED if job.lane == "keras@torch" else PASSED, error=error if job.lane == "keras@torch" else "", versions=old) for job in jobs}
    ledger.write(str(tmp_path / "keras-3.13.json"), "keras-3.13", jobs, results)
    view = releases.cell_versions(_pinned(sheets, str(tmp_path)), ("golden", "ones", "keras"))
    assert view["range"] == "" and view["failed"] == ["keras 3.13.2"]  # passing on keras@jax alone does not make 3.13.2 work
