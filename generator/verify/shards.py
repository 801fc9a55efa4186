"""Sharded verification: N machines each run a share of the jobs, and one merges their results.

`verify --shard K/N --bundle FILE` runs shard K's jobs and writes a bundle: its results keyed by
cache key, the plan they belong to (a hash of every job's id and key), the partition and the
versions. `verify --merge` / `build --merge` import bundles into the cache, after checking that
they are every shard of this plan, once each, with no failed job; otherwise nothing is imported
and the message names the shard.

The partition must be the same in every shard process, so it is a pure function of the plan and
of an explicit timings file (`--timings FILE`, the same file handed to every shard), never of a
shard's own `.cache/timings.json`. Without a file every job is estimated alike. Each bundle
records the partition's hash, and a merge refuses shards that partitioned differently.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass

from generator.files import write_json
from generator.lanes import LANES
from generator.model import NOT_APPLICABLE, PASSED, SKIPPED, Job, Result
from generator.verify.cache import Cache, digest, runner_code_hash
from generator.verify.runner import DEFAULT_IMPORT_ESTIMATE, DEFAULT_JOB_ESTIMATE
from generator.versions import lane_versions

FORMAT = "ml-hyperpolyglot-shard-bundle/1"
OK = (PASSED, NOT_APPLICABLE, SKIPPED)  # a job result a merge accepts


class MergeError(Exception):
    """Bundles that do not make one whole, passing verification of this plan."""


@dataclass(frozen=True)
class Item:
    """One job as the partition sees it: its id, its lane worker (sharing one import) and cost."""

    id: str
    group: str
    cost: float


def parse_shard(text: str) -> tuple[int, int]:
    """'K/N' -> (K, N), 1 <= K <= N."""
    try:
        k, n = (int(part) for part in text.split("/"))
    except ValueError:
        raise ValueError(f"--shard takes K/N (e.g. 2/4), not {text!r}") from None
    if not 1 <= k <= n:
        raise ValueError(f"--shard {text}: K must be between 1 and N")
    return k, n


def partition(items: list[Item], imports: dict[str, float], shards: int) -> list[list[str]]:
    """Job ids per shard: the longest job first, each to the shard where it ends soonest.

    A shard pays a lane worker's import once, for its first job of that lane, so a job joins a
    shard already running its lane unless another shard is lighter by more than the import: a
    lane's jobs stay together where that saves start-up, and a long lane is split where that
    balances. Pure and deterministic: ties go to the shard with the lane, then the lowest index.
    """
    loads = [0.0] * shards
    lanes: list[set[str]] = [set() for _ in range(shards)]
    parts: list[list[str]] = [[] for _ in range(shards)]
    for item in sorted(items, key=lambda item: (-item.cost, item.id)):
        start = imports.get(item.group, DEFAULT_IMPORT_ESTIMATE)
        ends = [(loads[s] + item.cost + (0.0 if item.group in lanes[s] else start), item.group not in lanes[s], s) for s in range(shards)]
        end, _, best = min(ends)
        loads[best] = end
        lanes[best].add(item.group)
        parts[best].append(item.id)
    return parts


def loads(parts: list[list[str]], items: list[Item], imports: dict[str, float]) -> list[float]:
    """The estimated work of each shard: its jobs and one import per lane worker it starts."""
    by_id = {item.id: item for item in items}
    out = []
    for part in parts:
        groups = {by_id[i].group for i in part}
        out.append(sum(by_id[i].cost for i in part) + sum(imports.get(g, DEFAULT_IMPORT_ESTIMATE) for g in groups))
    return out


def balance(work: list[float]) -> float:
    """max / mean of the shards' work (1.0 is perfect)."""
    mean = sum(work) / len(work) if work else 0.0
    return max(work) / mean if mean else 1.0


def items_for(jobs: list[Job], timings: dict[str, float]) -> tuple[list[Item], dict[str, float]]:
    """Each job's estimate (its measured time in `timings`, else its lane's mean there, else the
    runner's default) and each lane worker's import estimate."""
    per_lane: dict[str, list[float]] = {}
    for job in jobs:
        if job.id in timings:
            per_lane.setdefault(job.lane, []).append(timings[job.id])
    items, imports = [], {}
    for job in jobs:
        group = LANES[job.lane].worker_key
        known = per_lane.get(job.lane)
        default = sum(known) / len(known) if known else DEFAULT_JOB_ESTIMATE
        items.append(Item(job.id, group, float(timings.get(job.id, default))))
        imports[group] = float(timings.get(f"import:{group}", DEFAULT_IMPORT_ESTIMATE))
    return items, imports


def read_timings(path: str | None) -> dict[str, float]:
    """The timings file the partition balances on ({} without one: every job estimated alike)."""
    if not path:
        return {}
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    return {str(k): float(v) for k, v in data.items()}


def plan_hash(jobs: list[Job]) -> str:
    """What a plan is: every job's id and cache key (which holds the versions)."""
    return digest(sorted((job.id, job.key) for job in jobs))


def assign(jobs: list[Job], shards: int, timings: dict[str, float]) -> tuple[list[list[str]], list[float]]:
    """The partition of `jobs` into `shards`, and each shard's estimated work."""
    items, imports = items_for(jobs, timings)
    parts = partition(items, imports, shards)
    return parts, loads(parts, items, imports)


def _versions(jobs: list[Job]) -> dict:
    return {"python": sys.version, "runner": runner_code_hash(), "lanes": {lane: lane_versions(LANES[lane]) for lane in sorted({j.lane for j in jobs})}}


def make_bundle(k: int, n: int, jobs: list[Job], parts: list[list[str]], results: dict[str, Result], timings: dict, measured: dict) -> dict:
    """The bundle of shard k/n: its jobs' results by cache key, and what plan they belong to."""
    by_id = {job.id: job for job in jobs}
    mine = [by_id[i] for i in parts[k - 1]]
    return {
        "format": FORMAT,
        "shard": {"index": k, "count": n},
        "plan": {"hash": plan_hash(jobs), "jobs": len(jobs)},
        "partition": digest(parts),
        "timings": digest(timings),
        "versions": _versions(jobs),
        "jobs": {job.id: job.key for job in mine},
        "results": {job.key: results[job.id].to_json() for job in mine if job.id in results},
        "measured": {key: value for key, value in measured.items() if key in by_id or key.startswith("import:")},
    }


def write_bundle(path: str, bundle: dict) -> None:
    write_json(path, bundle, sort_keys=True, indent=1)


def _load(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:
            bundle = json.load(handle)
    except OSError as error:
        raise MergeError(f"bundle {path}: cannot be read ({error.strerror})") from None
    except ValueError as error:
        raise MergeError(f"bundle {path}: not JSON ({error})") from None
    if not isinstance(bundle, dict) or bundle.get("format") != FORMAT:
        raise MergeError(f"bundle {path}: not a shard bundle (format {FORMAT})")
    try:
        k, n = int(bundle["shard"]["index"]), int(bundle["shard"]["count"])
        fields = (bundle["plan"]["hash"], bundle["plan"]["jobs"], bundle["partition"], dict(bundle["jobs"]), dict(bundle["results"]))
    except (KeyError, TypeError, ValueError):
        raise MergeError(f"bundle {path}: incomplete (a field of {FORMAT} is missing)") from None
    if not (1 <= k <= n) or not all(isinstance(data, dict) for data in fields[4].values()):
        raise MergeError(f"bundle {path}: malformed (shard {k}/{n})")
    return bundle


def _name(bundle: dict, path: str) -> str:
    return f"shard {bundle['shard']['index']}/{bundle['shard']['count']} ({path})"


def check_bundles(paths: list[str], jobs: list[Job]) -> list[tuple[str, dict]]:
    """The bundles, when they are every shard of this plan once, complete and passing; else MergeError."""
    if not paths:
        raise MergeError("no bundle to merge")
    bundles = [(path, _load(path)) for path in paths]
    expected, here = plan_hash(jobs), _versions(jobs)
    problems = []
    for path, bundle in bundles:
        if bundle["plan"]["hash"] != expected:
            differ = _version_differences(bundle.get("versions", {}), here)
            problems.append(f"{_name(bundle, path)} is from another plan: {bundle['plan']['jobs']} job(s) there, {len(jobs)} here"
                            + (f"; versions differ: {differ}" if differ else "; the content or the worker differs"))
    if problems:
        raise MergeError("\n".join(problems))
    counts = {bundle["shard"]["count"] for _, bundle in bundles}
    if len(counts) != 1:
        raise MergeError("bundles of different shard counts: " + ", ".join(_name(b, p) for p, b in bundles))
    n = counts.pop()
    seen: dict[int, str] = {}
    for path, bundle in bundles:
        k = bundle["shard"]["index"]
        if k in seen:
            raise MergeError(f"shard {k}/{n} given twice: {seen[k]} and {path}")
        seen[k] = path
    missing = [f"{k}/{n}" for k in range(1, n + 1) if k not in seen]
    if missing:
        raise MergeError(f"shard {', '.join(missing)} missing: no bundle for it (got {len(seen)} of {n}); nothing merged")
    partitions = {bundle["partition"] for _, bundle in bundles}
    if len(partitions) != 1:
        raise MergeError("the shards partitioned the plan differently (give every shard the same --timings file): "
                         + ", ".join(f"{_name(b, p)} timings {b['timings'][:12]}" for p, b in bundles))
    keys = {job.id: job.key for job in jobs}
    owner: dict[str, str] = {}
    for path, bundle in bundles:
        for job_id, key in bundle["jobs"].items():
            if keys.get(job_id) != key or job_id in owner:
                raise MergeError(f"{_name(bundle, path)}: job {job_id} is not this plan's or is in two shards")
            owner[job_id] = _name(bundle, path)
            if key not in bundle["results"]:
                problems.append(f"{_name(bundle, path)}: no result for {job_id}")
                continue
            status = bundle["results"][key].get("status")
            if status not in OK:
                error = (bundle["results"][key].get("error") or bundle["results"][key].get("detail") or "").strip().splitlines()
                problems.append(f"{_name(bundle, path)}: {status}: {job_id}" + (f": {error[-1]}" if error else ""))
    left = sorted(set(keys) - set(owner))
    if left:
        problems.append(f"{len(left)} job(s) of the plan in no bundle, e.g. {left[0]}")
    if problems:
        raise MergeError("\n".join(problems))
    return bundles


def _version_differences(there: dict, here: dict) -> str:
    out = []
    if there.get("python") != here["python"]:
        out.append(f"python {there.get('python', '?').split()[0]} there, {here['python'].split()[0]} here")
    if there.get("runner") != here["runner"]:
        out.append("the worker's code")
    for lane, versions in here["lanes"].items():
        for name, version in versions.items():
            other = there.get("lanes", {}).get(lane, {}).get(name)
            if other is not None and other != version and f"{name} " not in " ".join(out):
                out.append(f"{name} {other} there, {version} here")
    return ", ".join(out)


def merge(paths: list[str], jobs: list[Job], cache: Cache) -> int:
    """Import the bundles' passed results into `cache` (after check_bundles); return how many."""
    bundles = check_bundles(paths, jobs)
    imported, measured = 0, {}
    for _, bundle in bundles:
        for key, data in bundle["results"].items():
            if data.get("status") == PASSED:
                cache.put(key, Result.from_json(data))
                imported += 1
        measured.update(bundle.get("measured", {}))
    if measured:
        cache.save_timings(measured)  # the next plan's timings file (CI saves it); a failure is a warning
    return imported


# --- running a shard (the command line prints what it did) ------------------------------------------------------


@dataclass
class ShardRun:
    """What `run_shard` did: shard k of n, its jobs, the estimate it balanced on, the bundle written."""

    k: int
    n: int
    planned: int  # jobs in the whole plan
    jobs: list[Job]  # this shard's
    work: list[float]  # every shard's estimated work
    bundle_path: str
    results: dict
    report: object = None  # the RunReport, when a job ran

    @property
    def failed(self) -> list[tuple[str, Result]]:
        return [(job.id, self.results[job.id]) for job in self.jobs if self.results[job.id].status not in OK]


def run_shard(cache: Cache, jobs: list[Job], k: int, n: int, bundle_path: str, timings_path: str | None, *,
              cores: int, force: bool = False, show_progress: bool = True, memory_cap: int | None = None,
              sandbox: str | None = None) -> ShardRun:  # fmt: skip
    """Run shard k/n of the plan `jobs` and write its bundle to `bundle_path` (whatever failed)."""
    from generator.verify.runner import run_jobs

    timings = read_timings(timings_path)
    parts, work = assign(jobs, n, timings)
    mine = set(parts[k - 1])
    to_run = [job for job in jobs if job.id in mine]
    results: dict[str, Result] = {}
    report = None
    if to_run:
        kwargs = {"memory_cap": memory_cap} if memory_cap else {}
        report = run_jobs(to_run, cache=cache, cores=cores, force=force, show_progress=show_progress, sandbox=sandbox, **kwargs)
        results = report.results
    measured = {**timings, **cache.load_timings()}  # this run's durations, else the ones it was given
    write_bundle(bundle_path, make_bundle(k, n, jobs, parts, results, timings, measured))
    return ShardRun(k, n, len(jobs), to_run, work, bundle_path, results, report)
