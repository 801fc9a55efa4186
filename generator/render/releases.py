"""Older releases on the page: a cell's verified range and the releases it fails on, the
environments' table on the verification report, and the same in the JSON exports.

The runs come from content/versions/*.json (verify/environments.py): the build never runs them.
Kept short on purpose (one line per failing release) so the largest page stays light.
"""

from __future__ import annotations

from generator.verify import environments

ERROR_CHARS = 160  # a failure's error on the page: its last line, cut to this


def cell_versions(verification, key: tuple[str, str, str]) -> dict:
    """{'range': 'jax 0.8.3–0.10.2', 'ranges': [...], 'failures': [...], 'stale': n} for one cell, or {}."""
    runs = verification.versions.get(key, ())
    if not runs:
        return {}
    verdict = verification.verdicts.get(key)
    ranges = environments.ranges(verdict, runs)
    failures = [{**f, "error": _cut(f["error"])} for f in environments.failures(verdict, runs)]
    lines: dict[str, list[str]] = {}  # one line per error, naming every release it fails on with it
    for failure in failures:
        releases = lines.setdefault(failure["error"], [])
        if failure["release"] not in releases:
            releases.append(failure["release"])
    return {
        "range": environments.range_text(ranges),
        "ranges": ranges,
        "failures": failures,
        "failed": sorted({f["release"] for f in failures}, key=environments.release_key),
        "lines": [{"releases": ", ".join(sorted(r, key=environments.release_key)), "error": error} for error, r in lines.items()],
        "stale": sum(run.stale for run in runs),
    }


def cell_export(verification, key: tuple[str, str, str]) -> dict:
    """The sheet export's 'releases' of one cell: ranges and failures (docs/data-format.md)."""
    view = cell_versions(verification, key)
    return {"releases": {"ranges": view["ranges"], "failures": view["failures"]}} if view else {}


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
