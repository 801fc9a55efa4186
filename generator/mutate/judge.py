"""What a mutant's runs mean: killed, equivalent or survived, in one lane and over all of them.

This module, operators.py and fingerprint.py are the tool's rules: their canonical digest is
`results.TOOL_VERSION`, and a change to them makes every recorded verdict stale.
"""

from __future__ import annotations

from generator.model import PASSED, Result, Status
from generator.mutate import fingerprint, operators
from generator.verify.judge import error_line


def reason(result: Result) -> str:
    """How a mutant failed, in one line: the check's assertion, the error it raised, a timeout."""
    if result.status in ("timeout", "crashed", "error"):
        return f"{result.status}: {(result.error.strip().splitlines() or [''])[0][:160]}"
    where = f"in its {result.stage}" if result.stage else ""
    return f"{error_line(result.error)} {where}".strip()[:240]


# What the runner reports when the lane, not the mutant, failed: no verdict on the mutant at all.
_INFRASTRUCTURE = ("the lane could not start", "the lane worker died", "the lane worker stopped", "the lane worker kept dying")


def lane_verdict(mutant: operators.Mutant, result: Result, references: tuple[Result, Result] | None) -> str:
    """'killed: why', 'equivalent' or 'survived' for one lane's run of a mutant; 'error: why' when the
    lane could not run it (its worker did not start or died), which is no verdict on the mutant."""
    if result.status == Status.ERROR or (result.status == Status.CRASHED and result.error.startswith(_INFRASTRUCTURE)):
        return f"error: {reason(result)}"
    if result.status != PASSED:
        return f"killed: {reason(result)}"
    if mutant.operator not in operators.EQUIVALENT_BY_VALUES or references is None:
        return "survived"
    digests = fingerprint.read(result.stdout)
    first, second = (fingerprint.read(r.stdout) if r.status == PASSED else None for r in references)
    if digests is None or first is None or second is None:
        return "survived"
    reference, unstable = fingerprint.stable(first, second)
    return "equivalent" if fingerprint.same_values(reference, unstable, digests) else "survived"


def overall(lanes: dict, code: str) -> tuple[str, dict, str]:
    """(verdict, lanes, code to keep) over every lane: survived when any lane let it through with other
    values; killed when no lane did and some lane rejected it; equivalent when it changed nothing anywhere.
    The mutant's code is kept for survivors and equivalents (the report shows them)."""
    verdicts = {v.split(":")[0] for v in lanes.values()}
    verdict = "survived" if "survived" in verdicts else "killed" if "killed" in verdicts else "equivalent"
    return verdict, dict(lanes), "" if verdict == "killed" else code
