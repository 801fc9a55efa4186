"""Older releases on the page: a cell's verified range and the releases it fails on, the
environments' table on the verification report, and the same in the JSON exports.

The runs come from content/versions/*.json (verify/environments.py): the build never runs them.
Kept short on purpose (one line per failing release) so the largest page stays light.
"""

from __future__ import annotations

import re

from generator.model import NOT_APPLICABLE, PASSED
from generator.verify import environments

ERROR_CHARS = 160  # a failure's error on the page: its last line, cut to this
_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+)')
# what failed, as the badge says it
STAGE_TEXT = {"setup": "setup fails", "code": "code fails", "check": "check fails", "": "fails"}
STAGES = ("setup", "code", "check")


def failed_stage(cell, error: str) -> str:
    """Which part of the cell failed in a run: 'setup', 'code' or 'check', from the outermost frame of
    the traceback in the cell's own YAML file (the statement that was running: a helper of the setup
    that the code calls fails in the code), or '' when the traceback does not say (cut short, or no
    frame of the cell's). The frame's source line is looked up in the cell's snippets (a run recorded
    before the YAML file moved keeps its old line numbers, and the text is the same); its line number
    decides only when the text is in none or several of them. The code failing means the API changed
    there; the check failing means the code ran but computed something else."""
    if cell is None:
        return ""
    own = cell.source.path
    lines = error.splitlines()
    frames = []  # (line number, source text) of each frame in the cell's file, outermost first
    for index, line in enumerate(lines):
        match = _FRAME.match(line)
        if match and (match.group(1) == own or own.endswith("/" + match.group(1)) or match.group(1).endswith("/" + own)):
            following = lines[index + 1].strip() if index + 1 < len(lines) and not _FRAME.match(lines[index + 1]) else ""
            frames.append((int(match.group(2)), following))
    if not frames:
        return ""
    number, text = frames[0]
    snippets = {stage: getattr(cell, stage) for stage in STAGES if getattr(cell, stage) is not None}
    if text:
        holding = [stage for stage, snippet in snippets.items() if text in (line.strip() for line in snippet.text.splitlines())]
        if len(holding) == 1:
            return holding[0]
    for stage, snippet in snippets.items():
        if snippet.line <= number < snippet.line + max(1, snippet.text.count("\n") + 1):
            return stage
    return ""


def cell_versions(verification, key: tuple[str, str, str], cell=None) -> dict:
    """{'range': 'jax 0.8.3–0.10.2', 'ranges': [...], 'failures': [...], 'stale': n} for one cell, or {}.
    With the cell, each failure says which part failed (`stage`: setup, code or check)."""
    runs = verification.versions.get(key, ())
    if not runs:
        return {}
    verdict = verification.verdicts.get(key)
    ranges = environments.ranges(verdict, runs)
    stages = {}  # (environment, lane) -> the part of the cell that failed there
    for run in runs:
        if not run.stale and run.result.status not in (PASSED, NOT_APPLICABLE):
            stages[(run.machine, run.lane)] = run.result.stage or failed_stage(cell, run.result.error)
    failures = [{**f, "error": _cut(f["error"]), "stage": stages.get((f["environment"], f["lane"]), "")} for f in environments.failures(verdict, runs)]
    lines: dict[tuple[str, str], list[str]] = {}  # one line per error, naming every release it fails on with it
    for failure in failures:
        releases = lines.setdefault((failure["stage"], failure["error"]), [])
        if failure["release"] not in releases:
            releases.append(failure["release"])
    failed: dict[str, set[str]] = {}  # release -> the parts that failed there
    for failure in failures:
        failed.setdefault(failure["release"], set()).add(failure["stage"])
    order = sorted(failed, key=environments.release_key)
    return {
        "range": environments.range_text(ranges),
        "ranges": ranges,
        "failures": failures,
        "failed": order,
        # the summary's '✗ jax 0.8.3: check fails' (releases that fail the same way share one phrase)
        "failed_text": _failed_text(order, failed),
        "lines": [
            {"releases": ", ".join(sorted(r, key=environments.release_key)), "stage": stage, "what": STAGE_TEXT.get(stage, "fails"), "error": error}
            for (stage, error), r in lines.items()
        ],
        "stale": sum(run.stale for run in runs),
        "runs": [
            {"environment": run.machine, "lane": run.lane, "status": "stale" if run.stale else str(run.result.status),
             "versions": run.result.versions, "date": run.result.date}
            for run in runs
        ],  # fmt: skip
    }


def _failed_text(order: list[str], failed: dict[str, set[str]]) -> str:
    groups: dict[str, list[str]] = {}
    for release in order:
        stages = failed[release] - {""} or {""}
        what = " and ".join(STAGE_TEXT[s] for s in ("setup", "code", "check", "") if s in stages)
        groups.setdefault(what, []).append(release)
    return "; ".join(f"{', '.join(releases)}: {what}" for what, releases in groups.items())


def cell_export(verification, key: tuple[str, str, str], cell=None) -> dict:
    """The sheet export's 'releases' of one cell: ranges, failures (with the part that failed) and
    every run of an older release (docs/data-format.md)."""
    view = cell_versions(verification, key, cell)
    return {"releases": {"ranges": view["ranges"], "failures": view["failures"], "runs": view["runs"]}} if view else {}


def environment_table(verification) -> list[dict]:
    """Per environment: passed, failed and stale runs, the framework releases it had (`versions`)
    and, as `version_text`, those that differ from the pinned run's."""
    rows = environments.counts(verification.versions)
    pinned: dict[str, str] = {}  # what the pinned run had, to name only the releases an environment moved
    for verdict in verification.verdicts.values():
        for _, result in verdict.results:
            pinned.update({n.removesuffix("-cpu"): v for n, v in result.versions.items() if n.removesuffix("-cpu") not in pinned})
    for row in rows:
        moved = {name: version for name, version in row["versions"].items() if pinned.get(name) != version} or row["versions"]
        row["version_text"] = " · ".join(f"{name} {version}" for name, version in sorted(moved.items()))
    return rows


def _cut(text: str) -> str:
    return text if len(text) <= ERROR_CHARS else text[: ERROR_CHARS - 1] + "…"
