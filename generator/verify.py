"""Verification: turn code cells into jobs, run them, and judge each cell from its lanes' results."""

from __future__ import annotations

from dataclasses import dataclass, field

from . import ledger as ledger_module
from .cache import Cache, job_key
from .lanes import LANES, on_device
from .model import CODE, PASSED, STATUSES, Job, Result, Sheet
from .runner import RunReport, run_jobs


@dataclass(frozen=True)
class CellVerdict:
    """A code cell's standing: the results of each of its lanes and the status they add up to."""

    status: str
    results: tuple[tuple[str, Result], ...]  # (lane, result) in the cell's lane order

    @property
    def passed_lanes(self) -> tuple[str, ...]:
        return tuple(lane for lane, result in self.results if result.status == PASSED)

    @property
    def duration(self) -> float:
        return sum(result.duration for _, result in self.results)

    @property
    def warnings(self) -> list[dict]:
        seen, out = set(), []
        for lane, result in self.results:
            for warning in result.warnings:
                key = (warning.get("category"), warning.get("message"))
                if key not in seen:
                    seen.add(key)
                    out.append({**warning, "lane": lane})
        return out


@dataclass
class Verification:
    report: RunReport | None
    verdicts: dict = field(default_factory=dict)  # (sheet id, row id, column id) -> CellVerdict
    gpu: dict = field(default_factory=dict)  # (sheet id, row id, column id) -> [GpuRun] from the ledgers
    gpu_jobs: list = field(default_factory=list)  # the GPU jobs the content has: coverage's denominator

    def failures(self) -> list[tuple[tuple[str, str, str], CellVerdict]]:
        return [(key, v) for key, v in sorted(self.verdicts.items()) if v.status not in (PASSED, "skipped")]


def plan(sheets: list[Sheet], *, only: set[str] | None = None, device: str = "cpu", lanes=None, gpus: int = 1) -> list[Job]:
    """The jobs that verify the code cells of `sheets` (of the rows in `only`, if given).

    On a device other than the CPU, only the lanes that can use it, and only the multi-process
    lanes that the device count allows.
    """
    lanes = lanes or LANES
    jobs = []
    for sheet in sheets:
        for row in sheet.rows():
            if only is not None and row.id not in only and f"{sheet.id}/{row.id}" not in only:
                continue
            for cell in row.cells:
                if cell.kind != CODE:
                    continue
                for lane_name in cell.lanes:
                    lane = lanes[lane_name]
                    if device != "cpu":
                        try:
                            lane = on_device(lane, device)
                        except ValueError:
                            continue
                        if lane.processes > gpus:
                            continue
                    jobs.append(Job(sheet.id, row.id, cell.column, lane.name, cell, row.timeout, job_key(cell, lane)))
    return jobs


def verify(
    sheets: list[Sheet],
    *,
    cache: Cache,
    cores: int,
    force: bool = False,
    only: set[str] | None = None,
    run: bool = True,
    show_progress: bool = True,
    memory_cap: int | None = None,
    ledger_dir: str | None = None,
) -> Verification:
    """Run (or take from the cache) every job of `sheets`; cells outside `only` come from the cache alone."""
    all_jobs = plan(sheets)
    to_run = plan(sheets, only=only) if only is not None else all_jobs
    report = None
    results: dict[str, Result] = {}
    if run and to_run:
        kwargs = {"memory_cap": memory_cap} if memory_cap else {}
        report = run_jobs(to_run, cache=cache, cores=cores, force=force, show_progress=show_progress, **kwargs)
        results.update(report.results)
    for job in all_jobs:
        if job.id not in results:
            cached = cache.get(job.key)
            if cached is not None:
                results[job.id] = cached
    return Verification(report, judge(all_jobs, results), *gpu_runs(sheets, ledger_dir))


def gpu_runs(sheets: list[Sheet], ledger_dir: str | None) -> tuple[dict, list[Job]]:
    """The ledgers' runs per cell, and every GPU job the content has (coverage's denominator)."""
    gpu_jobs = plan(sheets, device="cuda", gpus=8)
    ledgers = ledger_module.load_all(ledger_dir) if ledger_dir else []
    return ledger_module.merge(ledgers, gpu_jobs), gpu_jobs


def judge(jobs: list[Job], results: dict[str, Result]) -> dict:
    """Each cell's verdict: passed only when every one of its lanes passed."""
    by_cell: dict[tuple[str, str, str], list[tuple[str, Result]]] = {}
    for job in jobs:
        result = results.get(job.id) or Result(status="skipped", error="not verified in this build")
        by_cell.setdefault((job.sheet, job.row, job.column), []).append((job.lane, result))
    verdicts = {}
    for key, lane_results in by_cell.items():
        worst = min((result.status for _, result in lane_results), key=STATUSES.index)
        verdicts[key] = CellVerdict(worst, tuple(lane_results))
    return verdicts
