"""What the commands say, as text made from the stages' report objects: a verification's summary and
failures, a GPU or older-release run, a shard. Only cli.py prints it and chooses the exit status."""

from __future__ import annotations

from generator.model import Row, Status
from generator.verify.progress import summary_table

PASSED_CHECK = "the counterexample passed the check"  # verify/judge.py's detail for one the check did not reject
DEFAULT_TIMEOUT = Row.__dataclass_fields__["timeout"].default


def verification_text(verification) -> str:
    """The runner's table, its notes, every failure with its error, then the warnings."""
    lines = []
    if verification.report is not None:
        lines.append(summary_table(verification.report))
        lines += [f"note: {note}" for note in verification.report.notes]
    problems = set()
    for (sheet, row, column), verdict in verification.failures():
        for lane, result in verdict.results:
            if result.status != Status.PASSED:
                lines.append(f"\n{result.status.upper()}: {sheet}/{row} [{column}] in lane {lane}")
                if result.error:
                    lines.append(result.error.rstrip())
                if result.status == Status.TIMEOUT:
                    lines.append(f"(a row that needs longer says so: `timeout: SECONDS` on the row, beside its `id:`; the default is {DEFAULT_TIMEOUT:g} s)")
        at = dict(verdict.counterexample_at)
        for index, lane, result in verdict.counterexamples:
            if result.status != Status.PASSED and result.detail.startswith(PASSED_CHECK):
                lines.append(f"\nFAILED: {at.get(index, '?')}: counterexample {index} of {sheet}/{row} [{column}] passed the check in lane {lane}: "
                             "the check is too weak, or this snippet is not wrong (make the check reject it, or drop the counterexample)")  # fmt: skip
            elif result.status != Status.PASSED:
                lines.append(f"\n{result.status.upper()}: {at.get(index, '?')}: {sheet}/{row} [{column}] counterexample {index} in lane {lane}: {result.detail}")
                if result.error and result.detail.startswith(("expected", "the counterexample failed in")):
                    lines.append(result.error.rstrip())
        if verdict.problem and (sheet, row) not in problems:
            problems.add((sheet, row))
            lines.append(f"\nFAILED: {sheet}/{row}: {verdict.problem}")
    lines += verification.warnings.lines()
    return "\n".join(lines)


def markdown_summary(verification, only) -> str:
    """The verification table of the rows run, as Markdown."""
    lines = ["| status | row | column | lane | duration | versions |", "|---|---|---|---|---|---|"]
    for (sheet, row, column), verdict in sorted(verification.verdicts.items()):
        if only is not None and row not in only and f"{sheet}/{row}" not in only:
            continue
        for lane, result in verdict.results:
            mark = "✅" if result.status == Status.PASSED else "❌"
            versions = ", ".join(f"{k} {v}" for k, v in sorted(result.versions.items()))
            lines.append(f"| {mark} {result.status} | `{sheet}/{row}` | {column} | {lane} | {result.duration:.2f} s | {versions} |")
    if len(lines) == 2:
        lines.append("| – | no row changed | | | | |")
    return "\n".join(lines) + "\n"


def recorded_text(run, summary: str, warnings) -> str:
    """A GPU or older-release run (verify/recorded.py): the runner's table, notes, the ledger's summary."""
    lines = [summary_table(run.report), *(f"note: {note}" for note in run.report.notes), summary.rstrip("\n")]
    return "\n".join(lines + warnings.lines())


def shard_text(run, timings_path: str | None, warnings) -> str:
    """A shard (verify/shards.py ShardRun): its share, what ran, what failed, the bundle."""
    from generator.verify.shards import balance

    k, n = run.k, run.n
    lines = [f"shard {k}/{n}: {len(run.jobs)} of {run.planned} job(s), estimated {run.work[k - 1]:.1f} s of {sum(run.work):.1f} s "
             f"(max/mean over the shards {balance(run.work):.2f}; timings: {timings_path or 'none, every job alike'})"]  # fmt: skip
    if run.report is not None:
        lines.append(f"ran {run.report.ran} job(s) in {run.report.workers} lane worker(s), {run.report.wall:.1f} s")
    for job_id, result in run.failed:
        lines.append(f"{result.status.upper()}: {job_id}\n{(result.error or result.detail).rstrip()}")
    failed = f"; {len(run.failed)} job(s) failed: a merge will refuse it" if run.failed else ""
    lines.append(f"bundle written to {run.bundle_path}{failed}")
    return "\n".join(lines + warnings.lines())
