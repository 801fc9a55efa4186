"""Older releases: the content verified in named environments, recorded as ledgers by identity.

An environment is data, `environments/<name>.txt`: pip requirement lines that override
requirements.lock (`jax==0.9.2`, …) and a `# lanes:` line naming the lanes it verifies. `make
verify-env ENV=<name>` builds `.venvs/<name>` from the lock plus the overrides and runs, with that
environment's interpreter, `python -m generator verify --environment <name>`: the environment's
lanes (no counterexamples: they test a check's strength, not a release) are run and written to
`content/versions/<name>.json` in the GPU ledger's format (`ledger.write`), matched to cells by
identity (no versions), so a committed file stays valid until the cell changes. The build merges
these files like the GPU ledgers and shows per cell the range of releases it passed on
(`ranges`) and the older releases it fails on (`failures`).
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from generator import versions
from generator.lanes import LANES
from generator.model import NOT_APPLICABLE, PASSED
from generator.verify import ledger
from generator.verify.judge import error_line
from generator.verify.recorded import RecordedRun, run_and_record

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FOLDER = os.path.join(ROOT, "environments")
# the packages whose ranges a cell's badge shows, in this order (jaxlib follows jax, numpy is not a framework)
FRAMEWORKS = ("jax", "flax", "optax", "keras", "tensorflow-cpu", "torch")


@dataclass(frozen=True)
class Environment:
    name: str
    lanes: tuple[str, ...]
    requirements: tuple[str, ...]  # the override lines, as written

    @property
    def pins(self) -> dict[str, str]:
        """The exact versions the overrides pin (`name==version`), by normalised package name."""
        out = {}
        for line in self.requirements:
            match = re.fullmatch(r"([A-Za-z0-9_.\-]+)\s*==\s*([^\s;]+)", line)
            if match:
                out[normalise(match.group(1))] = match.group(2)
        return out


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _name(line: str) -> str:
    return normalise(re.split(r"[\s=<>!~;\[]", line.strip(), maxsplit=1)[0])


def load_environment(name: str, folder: str | None = None) -> Environment:
    folder = folder or FOLDER
    path = os.path.join(folder, f"{name}.txt")
    if not re.fullmatch(r"[a-z0-9][a-z0-9.\-]*", name) or not os.path.isfile(path):
        known = ", ".join(names(folder)) or "none"
        raise ValueError(f"no environment {name!r} (environments/{name}.txt); known: {known}")
    lanes: tuple[str, ...] = ()
    requirements = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if line.startswith("# lanes:"):
                lanes = tuple(line.split(":", 1)[1].split())
            elif line and not line.startswith("#"):
                requirements.append(line)
    unknown = [lane for lane in lanes if lane not in LANES]
    if not lanes or unknown:
        raise ValueError(f"{path}: needs a '# lanes:' line of known lanes (unknown: {', '.join(unknown) or 'none given'})")
    return Environment(name, lanes, tuple(requirements))


def names(folder: str | None = None) -> list[str]:
    folder = folder or FOLDER
    return sorted(n[:-4] for n in os.listdir(folder) if n.endswith(".txt")) if os.path.isdir(folder) else []


def requirements(env: Environment, lock: str) -> str:
    """The lock with the environment's overrides in place of the lines they name (one pip resolve,
    no downgrade after an upgrade). torch is left out: the Makefile installs it first, as for .venv."""
    overridden = {_name(line) for line in env.requirements}
    kept = []
    with open(lock, encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if line and not line.startswith("#") and _name(line) not in overridden | {"torch"}:
                kept.append(line)
    return "\n".join(kept + list(env.requirements)) + "\n"


def mismatched(env: Environment) -> list[str]:
    """The pinned packages this interpreter does not have at the environment's version."""
    return [f"{name} {have} (wants {want})" for name, want in env.pins.items() if (have := versions.package_version(name)) != want]


def verify_environment(env: Environment, jobs: list, content_dir: str, *, cache, cores: int, force: bool = False,
                       show_progress: bool = True, sandbox: str | None = None) -> RecordedRun:  # fmt: skip
    """The environment's lanes of `jobs` (no counterexamples), run here and written to
    content_dir/versions/<name>.json. The caller has checked this interpreter is the environment's."""
    jobs = [job for job in jobs if job.lane in env.lanes and not job.counterexample]
    folder = os.path.join(content_dir, "versions")
    return run_and_record(jobs, folder, lambda report: env.name, cache=cache, cores=cores, force=force, show_progress=show_progress,
                          sandbox=sandbox)  # fmt: skip


def summary(env: Environment, jobs, results) -> str:
    """Passed and failed per lane, then the failures grouped by the last line of their error."""
    counts: dict[str, list[int]] = {}
    causes: dict[str, list[str]] = {}
    for job in jobs:
        result = results.get(job.id)
        if result is None:
            continue
        ok = result.status in (PASSED, NOT_APPLICABLE)
        counts.setdefault(job.lane, [0, 0])[0 if ok else 1] += 1
        if not ok:
            causes.setdefault(error_line(result.error) or str(result.status), []).append(job.id)
    lines = [f"environment {env.name} ({', '.join(env.requirements)})", "| lane | passed | failed |", "|---|---|---|"]
    lines += [f"| {lane} | {p} | {f} |" for lane, (p, f) in sorted(counts.items())]
    for cause, ids in sorted(causes.items(), key=lambda item: -len(item[1])):
        lines += ["", f"{len(ids)} failed with: {cause}", *(f"- {i}" for i in sorted(ids))]
    return "\n".join(lines) + "\n"



# The build's side: the committed runs per cell, and what they add up to.


def runs(jobs, folder: str | None) -> dict:
    """The environments' runs per cell (ledger.GpuRun, machine = environment name), matched by
    identity to the cells' CPU jobs; an entry whose cell changed since is stale and never counts."""
    return ledger.runs(folder, [job for job in jobs if not job.counterexample])


def _version_key(text: str):
    try:
        return (0, Version(text))
    except InvalidVersion:
        return (1, text)


def release_key(release: str):
    """Order 'jax 0.8.3' before 'jax 0.10.2'."""
    name, _, version = release.partition(" ")
    return (name, _version_key(version))


def _pinned(verdict) -> dict[str, str]:
    """The versions of the pinned (lock) run: the first passed lane's, per package."""
    pinned: dict[str, str] = {}
    for _, result in verdict.results if verdict else ():
        for name, version in result.versions.items():
            pinned.setdefault(name, version)
    return pinned


def ranges(verdict, env_runs) -> list[dict]:
    """Per framework package, the oldest and newest release the cell passed on: the pinned run's
    and those of the environments where all its current runs passed. Only packages an environment
    moved (min < max)."""
    seen: dict[str, set[str]] = {}
    results = [result for _, result in verdict.results if result.status == PASSED] if verdict else []
    current = [run for run in env_runs if not run.stale]
    failing = {run.machine for run in current if run.result.status not in (PASSED, NOT_APPLICABLE)}
    # an environment counts only when every lane it ran the cell in passed (keras 3.13 on jax and
    # tensorflow but not on torch is a failure of the cell there, not part of its range)
    results += [run.result for run in current if run.result.status == PASSED and run.machine not in failing]
    for result in results:
        for name in FRAMEWORKS:
            if name in result.versions:
                seen.setdefault(name, set()).add(result.versions[name])
    out = []
    for name in FRAMEWORKS:
        versions = sorted(seen.get(name, ()), key=_version_key)
        if len(versions) > 1:
            out.append({"package": name.removesuffix("-cpu"), "min": versions[0], "max": versions[-1]})
    return out


def failures(verdict, env_runs) -> list[dict]:
    """The current environment runs that failed: the environment, the first framework release in
    it that differs from the pinned run (what the reader would have), and the error's last line."""
    pinned = _pinned(verdict)
    out, seen = [], set()
    for run in env_runs:
        if run.stale or run.result.status in (PASSED, NOT_APPLICABLE):
            continue
        versions = run.result.versions
        moved = [name for name in FRAMEWORKS if name in versions and versions[name] != pinned.get(name, versions[name])]
        release = f"{moved[0].removesuffix('-cpu')} {versions[moved[0]]}" if moved else run.machine
        error = error_line(run.result.error) or str(run.result.status)
        if (release, error) not in seen:
            seen.add((release, error))
            out.append({"environment": run.machine, "lane": run.lane, "release": release, "error": error})
    return out


def range_text(cell_ranges: list[dict]) -> str:
    """'jax 0.8.3–0.10.2 · flax 0.12.2–0.12.8'"""
    return " · ".join(f"{r['package']} {r['min']}–{r['max']}" for r in cell_ranges)


def counts(env_runs_by_cell: dict) -> list[dict]:
    """Per environment: its runs that passed, failed, and went stale (cell changed since)."""
    table: dict[str, dict] = {}
    for cell_runs in env_runs_by_cell.values():
        for run in cell_runs:
            row = table.setdefault(run.machine, {"environment": run.machine, "passed": 0, "failed": 0, "stale": 0, "versions": {}})
            key = "stale" if run.stale else "passed" if run.result.status in (PASSED, NOT_APPLICABLE) else "failed"
            row[key] += 1
            if not run.stale:
                row["versions"].update({n.removesuffix("-cpu"): v for n, v in run.result.versions.items() if n in FRAMEWORKS})
    return [table[name] for name in sorted(table)]

if __name__ == "__main__":  # `python -m generator.verify.environments NAME`: the requirements the Makefile installs
    print(requirements(load_environment(sys.argv[1]), os.path.join(ROOT, "requirements.lock")), end="")
