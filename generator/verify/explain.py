"""Why a cell ran or came from the cache (`verify --explain ROW`), and keeping the cache small
(`cache prune`).

Every verification remembers, per job, the parts its cache key was made of (hashes of the cell's
code, setup and check, the lane's definition, the worker's code; the Python and package versions,
and the versions of everything those packages depend on) and its last status, in
.cache/last-keys.json. Explaining a job compares its parts now with those.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time

from generator.files import write_json
from generator.lanes import Lane
from generator.model import PASSED, Job
from generator.verify.cache import Cache, identity_parts
from generator.verify.judge import counterexample_expect
from generator.versions import lane_distributions, lane_versions

LAST_KEYS = "last-keys.json"
# what each identity part is, in the words `--explain` uses
PART_NAMES = {
    "code": "the cell's code",
    "setup": "its setup",
    "check": "its check",
    "expect": "what is expected of it (a counterexample's 'raises', a row's 'same')",
    "lane": "the lane",
    "env": "the lane's environment",
    "imports": "the lane's imports",
    "optional_imports": "the lane's optional imports",
    "prelude": "the lane's prelude",
    "processes": "the lane's process count",
    "device": "the device",
    "runner": "the worker's code (generator/verify/worker/, comments and docstrings aside)",
}


def expectations(job: Job) -> dict | None:
    """What was expected of a job when its key was made (the same as verification.plan)."""
    if job.counterexample:
        return counterexample_expect(job.raises)
    return {"expose": job.same.value} if job.same is not None else None


def key_parts(job: Job, lane: Lane) -> dict:
    """The parts of a job's cache key, short and readable: hashes of the texts, versions in full."""
    parts = {name: _short(value) for name, value in identity_parts(job.cell, lane, expectations(job)).items()}
    parts["python"] = sys.version.split()[0]
    parts.update({f"package {name}": version for name, version in lane_versions(lane).items() if name != "python"})
    parts["distributions"] = _short(lane_distributions(lane.packages))
    return parts


def remember(cache: Cache, jobs: list[Job], results: dict, lanes: dict) -> None:
    """Record each job's key parts and status for a later `--explain`."""
    path = os.path.join(cache.root, LAST_KEYS)
    known = _load(path)
    for job in jobs:
        result = results.get(job.id)
        if result is not None:
            lane = lanes[job.lane]
            known["jobs"][job.id] = {"key": job.key, "status": str(result.status), "parts": key_parts(job, lane)}
            distributions = lane_distributions(lane.packages)
            known["distributions"][_short(distributions)] = distributions
    used = {entry["parts"].get("distributions") for entry in known["jobs"].values()}
    known["distributions"] = {digest: found for digest, found in known["distributions"].items() if digest in used}
    try:
        write_json(path, known, sort_keys=True, separators=(",", ":"))
    except OSError as error:  # an explanation is a convenience; a read-only cache must not fail the build
        cache.warnings.add(f"{path} could not be written ({error.strerror or error}): --explain will not know this build's keys")


def explain(jobs: list[Job], cache: Cache, lanes: dict, force: bool = False) -> list[str]:
    """One line per job: whether it comes from the cache, and if not, what changed since it last ran."""
    known = _load(os.path.join(cache.root, LAST_KEYS))
    lines = []
    for job in jobs:
        name = f"{job.sheet}/{job.row} [{job.column}] in {job.lane}" + (f", counterexample {job.counterexample}" if job.counterexample else "")
        cached = cache.get(job.key)
        if cached is not None and not force:
            lines.append(f"{name}: from the cache (passed on {cached.date or '?'}, {cached.duration:.2f} s, key {job.key[:12]})")
            continue
        lines.append(f"{name}: runs: {_why(job, lanes[job.lane], known['jobs'].get(job.id), known['distributions'], force)}")
    return lines


def _why(job: Job, lane: Lane, last: dict | None, closures: dict, force: bool) -> str:
    if force:
        return "--force runs every cell"
    if job.missing:
        return f"not here: it imports {', '.join(job.missing)}, which this machine lacks"
    if last is None:
        return "no earlier run of this cell in this lane is recorded in this cache"
    if last.get("key") == job.key:
        status = last.get("status", "?")
        if status != PASSED:
            return f"its last run ended '{status}' (only passed results are cached)"
        return "its passed result is no longer in the cache (pruned or deleted)"
    now = key_parts(job, lane)
    before = last.get("parts", {})
    changed = []
    for part in sorted(set(now) | set(before)):
        if now.get(part) == before.get(part):
            continue
        if part.startswith("package ") or part == "python":
            changed.append(f"{part.removeprefix('package ')} {before.get(part, 'absent')} -> {now.get(part, 'absent')}")
        elif part == "distributions":
            changed.append(_distribution_changes(closures.get(before.get(part, ""), {}), lane_distributions(lane.packages), lane))
        else:
            changed.append(f"{PART_NAMES.get(part, part)} changed")
    return "; ".join(changed) or "its key changed in a part this cache does not record"


def prune(cache: Cache, keep: set[str], dry_run: bool = False, tmp_age_s: float = 3600.0) -> tuple[int, int, int]:
    """Remove the stored results whose keys are not in `keep`, and temporary files older than
    `tmp_age_s` (left by interrupted writers). Returns (removed, kept, bytes freed)."""
    removed = kept = freed = 0
    folder = os.path.join(cache.root, "results")
    now = time.time()
    for directory, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(directory, name)
            try:
                stat = os.stat(path)
            except OSError:
                continue
            if name.endswith(".tmp"):
                stale = now - stat.st_mtime > tmp_age_s
            else:
                stale = name.removesuffix(".json") not in keep
            if not stale:
                kept += 1
                continue
            removed += 1
            freed += stat.st_size
            if not dry_run:
                try:
                    os.unlink(path)
                except OSError:
                    pass
    return removed, kept, freed


def _distribution_changes(before: dict, now: dict, lane: Lane) -> str:
    packages = set(lane.packages)
    changes = [f"{name} {before.get(name, 'absent')} -> {now.get(name, 'absent')}"
               for name in sorted(set(before) | set(now)) if before.get(name) != now.get(name) and name not in packages]  # fmt: skip
    return "dependencies of the lane's packages changed: " + (", ".join(changes) if changes else "(not recorded)")


def _short(value) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _load(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict) or not isinstance(data.get("jobs"), dict) or not isinstance(data.get("distributions"), dict):
        return {"jobs": {}, "distributions": {}}
    return data

