"""The ledger: committed results from machines CI does not have (GPUs), one JSON file per machine.

A GPU run (`verify --device cuda`) writes `content/ledger/<machine>.json`. The build merges every
ledger. An entry is matched by the job's identity (the cell, the lane's definition, the worker's
code and the device class), never by the CPU cache key: the GPU machine has its own Python and
framework versions, which the entry records and the page shows. An entry counts only while its
identity still matches the content; an edited cell's (or lane's) entry shows as stale, never as
verified. A passed run that did no work on the GPU (metadata only) "runs anywhere": it is neither
counted as GPU-verified nor in the denominator. Nothing but a real run writes a ledger.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass

from generator.errors import ContentError, ContentInvalid
from generator.files import atomic_write
from generator.model import NOT_APPLICABLE, PASSED, STATUSES, Job, Result

FORMAT = 2


@dataclass(frozen=True)
class GpuRun:
    """One ledger entry as the build sees it."""

    machine: str
    lane: str
    result: Result
    stale: bool

    @property
    def counts(self) -> bool:
        """Passed on the GPU, still current, and did work there."""
        return self.result.status == PASSED and not self.stale and self.result.used_device is not False

    @property
    def runs_anywhere(self) -> bool:
        return self.result.status == PASSED and not self.stale and self.result.used_device is False


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


LEDGER_FIELDS = ("status", "duration", "versions", "device", "date", "used_device", "detail")


def write(path: str, machine: str, jobs: list[Job], results: dict[str, Result]) -> dict:
    """Write the ledger of a GPU run, keeping the entries of cells this run did not cover. A ledger
    already there that cannot be read whole (a merge conflict, a truncated file) raises ContentInvalid
    naming its file and line and is left as it is: it is never replaced by this run's entries alone."""
    ran = {job.id for job in jobs if job.id in results}
    existing = read(path)
    entries = [e for e in existing["entries"] if e["id"] not in ran] if existing else []
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
                "identity": job.identity,
                **result.to_json(LEDGER_FIELDS),
                "error": result.error[-2000:],
            }
        )
    entries.sort(key=lambda e: e["id"])
    data = {"format": FORMAT, "machine": machine, "entries": entries}
    atomic_write(path, json.dumps(data, indent=1, sort_keys=True) + "\n")
    return data


def load_all(folder: str) -> list[dict]:
    """Every ledger in folder, validated; a malformed ledger is a content error with file:line."""
    if not os.path.isdir(folder):
        return []
    ledgers, errors = [], []
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".json"):
            continue
        try:
            ledgers.append(read(os.path.join(folder, name)))
        except ContentInvalid as invalid:
            errors.extend(invalid.errors)
    if errors:
        raise ContentInvalid(errors)
    return ledgers


def read(path: str) -> dict | None:
    """The ledger at `path`, validated whole; None when there is no file. Anything else that is not a
    whole, valid ledger raises ContentInvalid with the file and the line."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ContentInvalid([ContentError(path, 1, f"cannot read the ledger: {exc}")]) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ContentInvalid([ContentError(path, exc.lineno, f"invalid ledger JSON: {exc.msg}")]) from None
    line, problem = _validate(data, text)
    if problem:
        raise ContentInvalid([ContentError(path, line, f"malformed ledger: {problem}")])
    return data


REQUIRED = ("id", "sheet", "row", "column", "lane", "identity", "status")


def _validate(data, text: str) -> tuple[int, str]:
    """(line, problem) of the first thing wrong with a ledger's data, or (0, "")."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return 1, f"expected an object with format {FORMAT}"
    if not isinstance(data.get("machine"), str) or not data["machine"] or not isinstance(data.get("entries"), list):
        return 1, "needs 'machine' (a non-empty string) and 'entries' (a list)"
    for index, entry in enumerate(data["entries"]):
        if not isinstance(entry, dict):
            return 1, f"entry {index + 1} is not an object"
        missing = [key for key in REQUIRED if not isinstance(entry.get(key), str) or not entry[key]]
        if missing:  # the line is looked up only for the entry that is wrong (a count over the file each)
            return _line_of(text, entry.get("id")), f"entry {entry.get('id') or index + 1} lacks {missing} (each a non-empty string)"
        if entry["status"] not in STATUSES:
            return _line_of(text, entry["id"]), f"entry {entry['id']}: unknown status {entry['status']!r} (one of {', '.join(STATUSES)})"
    return 0, ""


def _line_of(text: str, entry_id) -> int:
    """The line of an entry's id in the file (1 when it cannot be found)."""
    if isinstance(entry_id, str) and entry_id:
        at = text.find(f'"id": {json.dumps(entry_id)}')
        if at >= 0:
            return text.count("\n", 0, at) + 1
    return 1


def runs(folder: str | None, jobs: list[Job]) -> dict[tuple[str, str, str], list[GpuRun]]:
    """The runs the ledgers in `folder` record (GPU machines, older-release environments), per cell,
    matched by identity to `jobs`; {} without a folder or a ledger."""
    ledgers = load_all(folder) if folder else []
    return merge(ledgers, jobs) if ledgers else {}


def merge(ledgers: list[dict], gpu_jobs: list[Job]) -> dict[tuple[str, str, str], list[GpuRun]]:
    """GPU runs per cell. An entry whose identity no longer matches the cell's GPU job is stale."""
    current = {job.id: job.identity for job in gpu_jobs}
    merged: dict[tuple[str, str, str], list[GpuRun]] = {}
    for ledger in ledgers:
        for entry in ledger["entries"]:
            if entry["id"] not in current:
                continue  # the cell or the lane is gone from the content
            result = Result.from_json(_without_unknowns(entry))
            run = GpuRun(ledger["machine"], entry["lane"], result, stale=current[entry["id"]] != entry["identity"])
            merged.setdefault((entry["sheet"], entry["row"], entry["column"]), []).append(run)
    for runs in merged.values():
        runs.sort(key=lambda run: (run.machine, run.lane))
    return merged


def _without_unknowns(entry: dict) -> dict:
    """The entry as the page should show it: ledgers written before the runner left out what it did
    not know say 'CUDA ?' for the lanes that never import PyTorch (which reports CUDA's version)."""
    device = entry.get("device", "")
    if device.endswith(", CUDA ?)"):
        return {**entry, "device": device[: -len(", CUDA ?)")] + ")"}
    return entry


def coverage(gpu_jobs: list[Job], merged: dict) -> tuple[int, int]:
    """(cells passed on a GPU, cells that could run on one and do GPU work)."""
    counts = coverage_counts(gpu_jobs, merged)
    return counts["passed"], counts["possible"]


def coverage_counts(gpu_jobs: list[Job], merged: dict) -> dict[str, int]:
    """GPU coverage in detail: cells that passed there with evidence of GPU work, cells whose GPU
    run did none ("runs anywhere", not in the denominator), cells the GPU machine could not run
    (a module missing there), and the cells that could run on a GPU and do work there."""
    cells = {job.cell_key for job in gpu_jobs}
    passed = anywhere = not_applicable = 0
    for key in cells:
        runs = [run for run in merged.get(key, ()) if not run.stale]
        if any(run.counts for run in runs):
            passed += 1
        elif any(run.runs_anywhere for run in runs):
            anywhere += 1
        elif runs and all(run.result.status == NOT_APPLICABLE for run in runs):
            not_applicable += 1
    return {
        "cells": len(cells),
        "passed": passed,
        "runs_anywhere": anywhere,
        "not_applicable": not_applicable,
        "possible": len(cells) - anywhere - not_applicable,
    }
