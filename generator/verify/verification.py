"""Verification: turn code cells into jobs, run them, and judge each cell from its lanes' results.

A code cell becomes one job per lane, plus one job per lane for each of its counterexamples (which
must fail: see `model.Counterexample`). A row that claims its columns compute the same thing
(`same:`) has its cells' exposed values compared across columns after they ran.
"""

from __future__ import annotations

import ast
import difflib
import importlib.util
from dataclasses import dataclass, field, replace
from functools import cache

from generator.errors import UnknownRow
from generator.lanes import LANES, on_device
from generator.model import CODE, FAILED, NOT_APPLICABLE, PASSED, SKIPPED, STATUSES, Cell, Job, Result, Sheet, Status
from generator.mutate import results as mutation_results
from generator.notices import Warnings
from generator.verify import environments, equivalence, explain
from generator.verify import ledger as ledger_module
from generator.verify.cache import Cache, job_identity, key_of
from generator.verify.judge import counterexample_expect
from generator.verify.runner import RunReport, run_jobs
from generator.versions import distribution_problems


@dataclass(frozen=True)
class CellVerdict:
    """A code cell's standing: the results of each of its lanes and the status they add up to."""

    status: Status
    results: tuple[tuple[str, Result], ...]  # (lane, result) in the cell's lane order
    counterexamples: tuple[tuple[int, str, Result], ...] = ()  # (1-based index, lane, result)
    problem: str = ""  # a failure of the row as a whole (columns that differ), shown with the cell
    counterexample_at: tuple[tuple[int, str], ...] = ()  # (1-based index, "file:line" of its code)

    @property
    def passed_lanes(self) -> tuple[str, ...]:
        return tuple(lane for lane, result in self.results if result.status == PASSED)

    def counterexample_runs(self, index: int) -> list[tuple[str, Result]]:
        """(lane, result) of counterexample `index` (1-based) in each lane."""
        return [(lane, result) for i, lane, result in self.counterexamples if i == index]

    def rejected(self, index: int) -> bool:
        """Whether every lane rejected counterexample `index` in this build."""
        runs = self.counterexample_runs(index)
        return bool(runs) and all(result.status == PASSED for _, result in runs)

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
    same: dict = field(default_factory=dict)  # (sheet id, row id) -> equivalence.Outcome
    versions: dict = field(default_factory=dict)  # (sheet id, row id, column id) -> [run] of older releases (environments.py)
    mutation: dict = field(default_factory=dict)  # (sheet id, row id, column id) -> mutate.results.CellMutation
    warnings: Warnings = field(default_factory=Warnings)  # what the build went on without (notices.py)

    def failures(self) -> list[tuple[tuple[str, str, str], CellVerdict]]:
        return [(key, v) for key, v in sorted(self.verdicts.items()) if v.status not in (PASSED, SKIPPED, NOT_APPLICABLE)]


def plan(sheets: list[Sheet], *, only: set[str] | None = None, device: str = "cpu", lanes=None, gpus: int = 1) -> list[Job]:
    """The jobs that verify the code cells of `sheets` (of the rows in `only`, if given).

    On the CPU: every lane of every cell but the GPU-only ones, and each counterexample in each
    lane. On another device: only the lanes that can use it, only the multi-process lanes that the
    device count allows, no CPU-only cell and no counterexample (a check's strength does not
    depend on the device).
    """
    lanes = lanes or LANES
    if only is not None:
        check_rows(sheets, only)
    jobs = []
    for sheet in sheets:
        for row in sheet.rows():
            if only is not None and row.id not in only and f"{sheet.id}/{row.id}" not in only:
                continue
            for cell in row.cells:
                if cell.kind != CODE or (cell.gpu_only if device == "cpu" else cell.cpu_only):
                    continue
                same = row.same if row.same is not None and (not row.same.columns or cell.column in row.same.columns) else None
                missing = missing_modules(cell)
                for lane_name in cell.lanes:
                    lane = lanes[lane_name]
                    if device != "cpu":
                        try:
                            lane = on_device(lane, device)
                        except ValueError:
                            continue
                        if lane.processes > gpus:
                            continue
                    expect = {"expose": same.value} if same is not None else None
                    identity = job_identity(cell, lane, expect)
                    job = Job(sheet.id, row.id, cell.column, lane.name, cell, row.timeout, key_of(identity, lane), identity,
                              same=same, missing=missing)  # fmt: skip
                    jobs.append(job)
                    if device != "cpu":
                        continue
                    for index, wrong in enumerate(cell.counterexamples, 1):
                        wrong_cell = replace(cell, code=wrong.code, counterexamples=())
                        wrong_identity = job_identity(wrong_cell, lane, counterexample_expect(wrong.raises))
                        jobs.append(
                            Job(sheet.id, row.id, cell.column, lane.name, wrong_cell, row.timeout, key_of(wrong_identity, lane), wrong_identity,
                                counterexample=index, raises=wrong.raises,
                                missing=missing_modules(wrong_cell))  # fmt: skip
                        )
    return jobs


def check_rows(sheets: list[Sheet], only) -> None:
    """Raise UnknownRow naming every id of `only` (ROW or SHEET/ROW) that is no row of `sheets`, each with
    the closest ids: a mistyped id must not run nothing and say "done"."""
    bare = {row.id for sheet in sheets for row in sheet.rows()}
    qualified = {f"{sheet.id}/{row.id}" for sheet in sheets for row in sheet.rows()}
    unknown = sorted(set(only) - bare - qualified)
    if unknown:
        lines = []
        for name in unknown:  # the closest ids written as this one is (SHEET/ROW or ROW)
            close = difflib.get_close_matches(name, sorted(qualified if "/" in name else bare), n=3, cutoff=0.6)
            lines.append(f"no row '{name}' in the content" + (f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else
                                                                 " (`python -m generator coverage` lists every row)"))  # fmt: skip
        raise UnknownRow("\n".join(lines))


def missing_modules(cell: Cell) -> tuple[str, ...]:
    """The top-level modules the cell imports that this interpreter cannot find."""
    names: set[str] = set()
    for snippet in (cell.setup, cell.code, cell.check):
        if snippet is not None:
            names.update(_imported(snippet.text))
    return tuple(sorted(name for name in names if not _installed(name)))


@cache
def _imported(text: str) -> frozenset[str]:
    """The top-level modules `text` imports, at any depth. Imports are statements, so only statement
    lists are walked, not expressions (a tenth of the nodes: every build plans every cell)."""
    try:
        stack = list(ast.parse(text).body)
    except SyntaxError:
        return frozenset()
    names = set()
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
        for attribute in ("body", "orelse", "finalbody", "handlers", "cases"):
            stack.extend(getattr(node, attribute, None) or ())
    return frozenset(names)


@cache
def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


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
    versions_dir: str | None = None,
    sandbox: str | None = None,
    mutants_dir: str | None = None,
) -> Verification:
    """Run (or take from the cache) every job of `sheets`; cells outside `only` come from the cache alone."""
    all_jobs = plan(sheets)
    to_run = plan(sheets, only=only) if only is not None else all_jobs
    for packages in sorted({LANES[job.lane].packages for job in all_jobs}):
        for problem in distribution_problems(packages):
            cache.warnings.add(problem)
    report = None
    results: dict[str, Result] = {}
    if run and to_run:
        kwargs = {"memory_cap": memory_cap} if memory_cap else {}
        report = run_jobs(to_run, cache=cache, cores=cores, force=force, show_progress=show_progress, sandbox=sandbox, **kwargs)
        results.update(report.results)
    for job in all_jobs:
        if job.id not in results:
            cached = cache.get(job.key)
            if cached is not None:
                results[job.id] = cached
    if report is not None and report.ran:  # what ran is what --explain compares with later
        explain.remember(cache, all_jobs, results, LANES)
    verdicts, same = judge_with_equivalence(all_jobs, results)
    gpu, gpu_jobs = gpu_runs(sheets, ledger_dir)
    mutation = mutation_results.standing(sheets, all_jobs, mutation_results.load(mutants_dir)) if mutants_dir else {}
    return Verification(report, verdicts, gpu, gpu_jobs, same, environments.runs(all_jobs, versions_dir), mutation, cache.warnings)


def gpu_runs(sheets: list[Sheet], ledger_dir: str | None) -> tuple[dict, list[Job]]:
    """The ledgers' runs per cell, and every GPU job the content has (coverage's denominator)."""
    gpu_jobs = plan(sheets, device="cuda", gpus=8)
    return ledger_module.runs(ledger_dir, gpu_jobs), gpu_jobs


def judge(jobs: list[Job], results: dict[str, Result]) -> dict:
    """Each cell's verdict: passed only when every one of its lanes passed and every one of its
    counterexamples was rejected, in every lane."""
    return judge_with_equivalence(jobs, results)[0]


def judge_with_equivalence(jobs: list[Job], results: dict[str, Result]) -> tuple[dict, dict]:
    """The cells' verdicts, and the outcome of each equivalence row (which can fail its cells)."""
    by_cell: dict[tuple[str, str, str], list[tuple[str, Result]]] = {}
    wrong: dict[tuple[str, str, str], list[tuple[int, str, Result]]] = {}
    wrong_at: dict[tuple[str, str, str], dict[int, str]] = {}
    for job in jobs:
        result = results.get(job.id) or Result(status=SKIPPED, error="not verified in this build")
        if job.counterexample:
            wrong.setdefault(job.cell_key, []).append((job.counterexample, job.lane, result))
            wrong_at.setdefault(job.cell_key, {})[job.counterexample] = f"{job.cell.source.path}:{job.cell.code.line}"
        else:
            by_cell.setdefault(job.cell_key, []).append((job.lane, result))
    outcomes = equivalence.compare(jobs, results)
    verdicts = {}
    for key, lane_results in by_cell.items():
        statuses = [result.status for _, result in lane_results] + [result.status for _, _, result in wrong.get(key, ())]
        worst = min(statuses, key=STATUSES.index)
        problem = ""
        outcome = outcomes.get(key[:2])
        if outcome is not None and key[2] in outcome.blamed:
            problem = outcome.message
            worst = min(worst, FAILED, key=STATUSES.index)
        verdicts[key] = CellVerdict(worst, tuple(lane_results), tuple(sorted(wrong.get(key, ()))), problem, tuple(sorted(wrong_at.get(key, {}).items())))
    return verdicts, outcomes
