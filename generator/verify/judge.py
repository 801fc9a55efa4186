"""What a worker's result means: a counterexample's verdict, evidence of GPU work, a job that
cannot run here."""

from __future__ import annotations

import datetime
import re
from dataclasses import replace
from functools import cache

from generator.lanes import Lane
from generator.model import NOT_APPLICABLE, PASSED, Job, Result, Status
from generator.verify.canonical import module_digest
from generator.verify.machine import cpu_description
from generator.versions import lane_versions


def not_applicable(job: Job, lane: Lane) -> Result:
    """The result of a job whose cell imports what this machine lacks: it cannot run here."""
    missing = ", ".join(job.missing)
    return Result(
        status=NOT_APPLICABLE,
        error=f"not run here: the cell imports {missing}, which is not installed on this machine",
        versions=lane_versions(lane),
        device=cpu_description() if lane.device == "cpu" else lane.device,
        date=datetime.date.today().isoformat(),
    )


@cache
def rules_hash() -> str:
    """A hash of this file's canonical form (no comments, no docstrings), part of every counterexample's
    identity: the verdict is judged here, after the run, so a change to the rules must re-run the
    counterexamples rather than keep old verdicts."""
    return module_digest(__file__)


def counterexample_expect(raises: str) -> dict:
    """What a counterexample job expects, as its identity records it (with the rules that judge it)."""
    return {"fail": True, "raises": raises, "rules": rules_hash()}


def judge_counterexample(job: Job, result: Result) -> Result:
    """A counterexample passes (is proven wrong) only when its check rejects it, or, with `raises`,
    when its code raises a matching error. A counterexample that runs and passes the check shows the
    check too weak; one that breaks in the setup, or raises something else, proves nothing. Nor does
    one that fails on a name it never defines (a NameError the check or a `raises` pattern happens
    to accept): the wrong snippet must define what the check reads, so that the check's assertions
    are what reject it. A `raises` pattern that names NameError itself is the exception."""
    raises = job.raises
    last = error_line(result.error)
    if result.status == PASSED:
        verdict, detail = Status.FAILED, "the counterexample passed the check: the check is too weak to reject it"
    elif result.status != Status.FAILED:
        return result  # crashed, timed out, could not start: not a rejection, reported as it is
    elif last.startswith("NameError") and "NameError" not in raises:
        verdict, detail = Status.FAILED, (
            f"the counterexample failed in its {result.stage or '?'} on a name it does not define ({last}), which proves "
            "nothing about the check: define in it every name the check reads"
        )
    elif raises:
        if result.stage == "code" and re.search(raises, result.error):
            verdict, detail = PASSED, f"raises as expected: {last}"
        else:
            verdict, detail = Status.FAILED, f"expected the code to raise /{raises}/, but it failed in {result.stage or '?'} with: {last}"
    elif result.stage == "check":
        verdict, detail = PASSED, f"rejected by the check: {last}"
    else:
        verdict, detail = Status.FAILED, f"the counterexample failed in its {result.stage or '?'}, not in the check, with: {last} (give 'raises' if the wrong code itself is meant to raise)"
    return replace(result, status=verdict, error=result.error if verdict != PASSED else "", detail=detail)


def error_line(error: str) -> str:
    """The error's own line: the exception after the traceback's last frame (its message may run
    on over more lines: the first is kept), or the last line when there is no traceback. A bare
    exception (`AssertionError`, no message) comes with the source line that raised it:
    `AssertionError at: assert str(x.device) == "cpu:0"`."""
    lines = [line.strip() for line in error.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    frames = [i for i, line in enumerate(lines) if line.startswith('File "')]
    if not frames or frames[-1] + 2 >= len(lines):
        return lines[-1][:200]
    source, at = lines[frames[-1] + 1], frames[-1] + 2
    while at < len(lines) - 1 and set(lines[at]) <= set("^~ "):
        at += 1
    header = lines[at]
    if ":" not in header and not set(header) <= set("^~ "):
        header = f"{header} at: {source}"
    return header[:200]


def device_evidence(evidence: dict) -> tuple[bool, str]:
    """Whether a GPU run did work on the GPU, and the evidence, from the worker's counters."""
    parts = []
    if evidence.get("torch_allocations", 0) > 0:
        parts.append(f"{evidence['torch_allocations']} CUDA allocations (torch)")
    if evidence.get("jax_live_arrays", 0) > 0:
        parts.append(f"{evidence['jax_live_arrays']} live JAX arrays on the GPU")
    if evidence.get("namespace_arrays", 0) > 0:
        parts.append(f"{evidence['namespace_arrays']} arrays left on the GPU")
    if not parts:
        return False, "no GPU work seen: the cell runs anywhere (metadata only)"
    return True, "; ".join(parts)
