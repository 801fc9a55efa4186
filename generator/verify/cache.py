"""The result cache: one JSON file per passed job, keyed by everything that could change the result.

A missing, unreadable or malformed entry is a miss, never a crash; an entry that is there but cannot
be read, and a result or timings file that cannot be written, are said on the build's warnings
channel (`notices.Warnings`), never swallowed. Writes are atomic (a temporary file renamed into
place), so builds running at once and builds interrupted mid-write leave only whole entries behind.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from functools import cache

from generator.files import discard, write_json, write_temp
from generator.lanes import Lane, base_env
from generator.model import PASSED, Cell, Result
from generator.notices import Warnings
from generator.verify.canonical import package_digest
from generator.verify.lane_worker import WORKER_SCRIPT
from generator.versions import lane_distributions, lane_versions


@cache
def runner_code_hash() -> str:
    """A hash of the code that runs cells (every module of the worker, in its canonical form: no
    comments, no docstrings): a change of what it does re-runs every cell, a comment edit nothing."""
    return package_digest(WORKER_SCRIPT)


def digest(parts) -> str:
    """The sha256 of `parts` as canonical JSON: what identities, keys and shard plans are."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def job_identity(cell: Cell, lane: Lane, expect: dict | None = None, runner: str | None = None) -> str:
    """What a run is, on any machine: the cell, what is expected of it, the lane's definition,
    the worker's code and the device class. No versions: a GPU machine never has the CPU lock's
    versions, and its results must still count (the ledger records and shows them). `runner`: the
    identity under another digest of the worker (what `ledger rekey` compares with)."""
    return digest(identity_parts(cell, lane, expect, runner))


def identity_parts(cell: Cell, lane: Lane, expect: dict | None = None, runner: str | None = None) -> dict:
    """The parts a job's identity is the hash of (explain.py names the ones that changed)."""
    return {
        "code": cell.code.text if cell.code else "",
        "setup": cell.setup.text if cell.setup else "",
        "check": cell.check.text if cell.check else "",
        "expect": expect or {},
        "lane": lane.name,
        "env": base_env(lane),
        "imports": list(lane.imports),
        "optional_imports": list(lane.optional_imports),
        "prelude": lane.prelude,
        "processes": lane.processes,
        "device": lane.device,
        "default_device": lane.default_device,
        "runner": runner or runner_code_hash(),
    }


def job_key(cell: Cell, lane: Lane, expect: dict | None = None) -> str:
    """The cache key of running `cell` in `lane` here: its identity and this machine's versions."""
    return key_of(job_identity(cell, lane, expect), lane)


def key_of(identity: str, lane: Lane) -> str:
    """The cache key of a job with this identity in `lane`, on this machine."""
    return digest(
        {
            "identity": identity,
            "python": sys.version,
            "versions": lane_versions(lane),
            # what the lane's packages import in turn (a new scipy changes jax's results too)
            "distributions": lane_distributions(lane.packages),
        }
    )


class Cache:
    """Passed results on disk under `root`, one file per key."""

    def __init__(self, root: str, warnings: Warnings | None = None):
        self.root = root
        self.warnings = warnings if warnings is not None else Warnings()

    def _path(self, key: str) -> str:
        return os.path.join(self.root, "results", key[:2], key + ".json")

    def get(self, key: str) -> Result | None:
        """The passed result stored under `key`, or None: absent is a plain miss; there but unreadable
        is a miss and a warning (a cache that silently reads as empty re-runs every job)."""
        path = self._path(key)
        try:
            with open(path, encoding="utf-8") as handle:
                data = json.load(handle)
            if data.get("key") != key:
                raise ValueError(f"it holds the entry of another key ({str(data.get('key'))[:12]})")
            result = Result.from_json(data["result"], cached=True)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
            self.warnings.add(f"cache entry {path} could not be read ({type(error).__name__}: {error}): its job runs again")
            return None
        return result if result.status == PASSED else None

    def put(self, key: str, result: Result, replace: bool = False) -> Result:
        """Store a passed result; return the result stored under `key`, which is the one to show.

        Entries are written once: when another build stored a passed result for the same key
        first (two builds ran the same cell at once), that entry is kept and returned, so every
        build shows the same result for a key whichever finished first. `replace` (--force)
        overwrites it with this result instead. A failure is not stored and is returned as it is.
        """
        if result.status != PASSED:
            return result  # failures are always run again: a failure is never stale-but-shown
        path = self._path(key)
        record = {"key": key, "result": result.to_json()}
        try:
            tmp = write_temp(path, json.dumps(record, sort_keys=True))
        except OSError as error:
            self.warnings.add(f"a result could not be stored in {self.root} ({error.strerror or error}): the next build runs its job again")
            return Result.from_json(record["result"], cached=False)
        try:
            if replace:
                os.replace(tmp, path)
            else:
                try:
                    os.link(tmp, path)  # atomic, and fails when the entry exists
                except FileExistsError:
                    stored = self.get(key)
                    if stored is not None:
                        return stored
                    os.replace(tmp, path)  # the entry there is unreadable (said by get): replace it
                except OSError:
                    os.replace(tmp, path)  # no hard links on this file system: last write wins
        except OSError as error:
            self.warnings.add(f"a result could not be stored in {self.root} ({error.strerror or error}): the next build runs its job again")
        finally:
            discard(tmp)
        return Result.from_json(record["result"], cached=False)

    def load_timings(self) -> dict[str, float]:
        """Last measured durations by job id and import times by lane: for scheduling only."""
        path = os.path.join(self.root, "timings.json")
        try:
            with open(path, encoding="utf-8") as handle:
                data = json.load(handle)
            return {str(k): float(v) for k, v in data.items()}
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, TypeError, AttributeError) as error:
            self.warnings.add(f"{path} could not be read ({type(error).__name__}: {error}): jobs are scheduled without their last durations")
            return {}

    def save_timings(self, timings: dict[str, float]) -> None:
        """Merge `timings` into timings.json; a failure to write is a warning (they only schedule)."""
        merged = {**self.load_timings(), **timings}
        path = os.path.join(self.root, "timings.json")
        try:
            write_json(path, merged, sort_keys=True)
        except OSError as error:
            self.warnings.add(f"{path} could not be written ({error.strerror or error}): the next build schedules without these durations")


if __name__ == "__main__":  # `python -m generator.verify.cache`: the worker's digest, as identities use it
    print(runner_code_hash())
