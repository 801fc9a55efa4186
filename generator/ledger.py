"""The ledger: committed results from machines CI does not have (GPUs), one JSON file per machine.

A GPU run (`verify --device cuda`) writes `content/ledger/<machine>.json`. The build merges every
ledger: an entry counts only while its cell hash still matches the content; an edited cell's entry
shows as stale, never as verified. Nothing but a real run writes a ledger.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass

from .errors import ContentError, ContentInvalid
from .model import PASSED, Job, Result

FORMAT = 1


@dataclass(frozen=True)
class GpuRun:
    """One ledger entry as the build sees it."""

    machine: str
    lane: str
    result: Result
    stale: bool

    @property
    def counts(self) -> bool:
        return self.result.status == PASSED and not self.stale


def machine_name(device_name: str) -> str:
    """A file-name slug for a device, e.g. 'NVIDIA H100 80GB HBM3' -> 'nvidia-h100-80gb-hbm3'."""
    return re.sub(r"[^a-z0-9]+", "-", device_name.lower()).strip("-") or "gpu"


def gpu_count() -> int:
    """How many NVIDIA GPUs this machine has (0 without a driver)."""
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


def write(path: str, machine: str, jobs: list[Job], results: dict[str, Result]) -> dict:
    """Write the ledger of a GPU run, keeping the entries of cells this run did not cover."""
    entries = []
    ran = {job.id for job in jobs if job.id in results}
    try:
        with open(path, encoding="utf-8") as handle:
            entries = [e for e in json.load(handle).get("entries", []) if e.get("id") not in ran]
    except (OSError, ValueError, AttributeError):
        entries = []
    for job in sorted(jobs, key=lambda j: j.id):
        result = results.get(job.id)
        if result is None:
            continue
        entries.append(
            {
                "id": job.id,
                "sheet": job.sheet,
                "row": job.row,
                "column": job.column,
                "lane": job.lane,
                "key": job.key,
                "status": result.status,
                "duration": round(result.duration, 4),
                "versions": result.versions,
                "device": result.device,
                "date": result.date,
                "error": result.error[-2000:],
            }
        )
    entries.sort(key=lambda e: e["id"])
    data = {"format": FORMAT, "machine": machine, "entries": entries}
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=1, sort_keys=True)
        handle.write("\n")
    os.replace(tmp, path)
    return data


def load_all(folder: str) -> list[dict]:
    """Every ledger in folder, validated; a malformed ledger is a content error with file:line."""
    if not os.path.isdir(folder):
        return []
    ledgers, errors = [], []
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".json"):
            continue
        path = os.path.join(folder, name)
        try:
            with open(path, encoding="utf-8") as handle:
                data = json.load(handle)
        except json.JSONDecodeError as exc:
            errors.append(ContentError(path, exc.lineno, f"invalid ledger JSON: {exc.msg}"))
            continue
        except OSError as exc:
            errors.append(ContentError(path, 1, f"cannot read the ledger: {exc}"))
            continue
        problem = _validate(data)
        if problem:
            errors.append(ContentError(path, 1, f"malformed ledger: {problem}"))
            continue
        ledgers.append(data)
    if errors:
        raise ContentInvalid(errors)
    return ledgers


def _validate(data) -> str:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return f"expected an object with format {FORMAT}"
    if not isinstance(data.get("machine"), str) or not isinstance(data.get("entries"), list):
        return "needs 'machine' (string) and 'entries' (list)"
    for entry in data["entries"]:
        missing = {"id", "sheet", "row", "column", "lane", "key", "status"} - set(entry if isinstance(entry, dict) else ())
        if missing:
            return f"an entry lacks {sorted(missing)}"
    return ""


def merge(ledgers: list[dict], gpu_jobs: list[Job]) -> dict[tuple[str, str, str], list[GpuRun]]:
    """GPU runs per cell. An entry whose key no longer matches the cell's GPU job is stale."""
    current = {job.id: job.key for job in gpu_jobs}
    merged: dict[tuple[str, str, str], list[GpuRun]] = {}
    for ledger in ledgers:
        for entry in ledger["entries"]:
            if entry["id"] not in current:
                continue  # the cell or the lane is gone from the content
            result = Result.from_json(entry)
            run = GpuRun(ledger["machine"], entry["lane"], result, stale=current[entry["id"]] != entry["key"])
            merged.setdefault((entry["sheet"], entry["row"], entry["column"]), []).append(run)
    for runs in merged.values():
        runs.sort(key=lambda run: (run.machine, run.lane))
    return merged


def coverage(gpu_jobs: list[Job], merged: dict) -> tuple[int, int]:
    """(cells passed on a GPU, cells that could run on one)."""
    cells = {(job.sheet, job.row, job.column) for job in gpu_jobs}
    passed = sum(1 for key in cells if any(run.counts for run in merged.get(key, ())))
    return passed, len(cells)
