"""`ledger rekey`: carry the committed ledgers (GPU runs, older releases) over a change of the worker's
digest that changes no behaviour.

An entry's identity includes the digest of the worker's code (`cache.runner_code_hash`), so a change
of how that digest is computed, or a refactoring the canonical form still sees (a module split, a
renamed helper), makes every entry stale, and a GPU run is rarely at hand to make them again. Given
the digest the entries were written under, an entry is re-keyed only when its identity is exactly
the identity its cell's current job has under that digest: the cell, its lane, what is expected of
it and the device are unchanged, and only the worker's digest moved. Every other entry is left as
it is (a stale entry stays stale). Whether the worker's behaviour really is unchanged is for the
person who runs this to say, as the commit that moved the digest does.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from generator.files import atomic_write
from generator.lanes import LANES, on_device
from generator.model import Job, Sheet
from generator.verify import ledger
from generator.verify.cache import job_identity
from generator.verify.verification import plan


@dataclass(frozen=True)
class Rekeyed:
    """What `rekey_file` did to one ledger."""

    path: str
    rekeyed: int  # entries carried over to the current identity
    current: int  # entries that already had it
    left: int  # entries whose cell, lane or expectation changed too (stale), or whose cell is gone

    def line(self) -> str:
        return f"{self.path}: {self.rekeyed} re-keyed, {self.current} already current, {self.left} left as they were"


def _expect(job: Job) -> dict | None:
    return {"expose": job.same.value} if job.same is not None else None


def _lane(name: str):
    base, _, device = name.partition(":")
    return on_device(LANES[base], device) if device else LANES[base]


def rekey_file(path: str, jobs: list[Job], old_runner: str, dry_run: bool = False) -> Rekeyed:
    """Re-key the entries of the ledger at `path` whose identity under `old_runner` is their job's."""
    data = ledger.read(path)
    if data is None:
        return Rekeyed(path, 0, 0, 0)
    by_id = {job.id: job for job in jobs if not job.counterexample}
    rekeyed = current = left = 0
    for entry in data["entries"]:
        job = by_id.get(entry["id"])
        if job is not None and entry["identity"] == job.identity:
            current += 1
        elif job is not None and entry["identity"] == job_identity(job.cell, _lane(job.lane), _expect(job), runner=old_runner):
            entry["identity"] = job.identity
            rekeyed += 1
        else:
            left += 1
    if rekeyed and not dry_run:
        atomic_write(path, json.dumps(data, indent=1, sort_keys=True) + "\n")  # as ledger.write writes it
    return Rekeyed(path, rekeyed, current, left)


def rekey(content_dir: str, sheets: list[Sheet], old_runner: str, dry_run: bool = False) -> list[Rekeyed]:
    """Re-key every ledger of the content: the GPU ledgers against the GPU jobs, the older releases'
    files against the CPU jobs."""
    folders = {"ledger": plan(sheets, device="cuda", gpus=8), "versions": plan(sheets)}
    out = []
    for folder, jobs in folders.items():
        path = os.path.join(content_dir, folder)
        ledger.load_all(path)  # every file readable, or nothing is touched
        for name in sorted(os.listdir(path)) if os.path.isdir(path) else ():
            if name.endswith(".json"):
                out.append(rekey_file(os.path.join(path, name), jobs, old_runner, dry_run))
    return out
