"""`mutate`: run every code cell's mutants like counterexamples and judge them.

For each code cell and each of its CPU lanes (the cell's job), the mutants of its code (operators.py)
run in the lane with the cell's setup and check, in the same workers and sandbox as every cell. A
mutant is **killed** when it fails in every lane (in the check, or anywhere: a wrong snippet that
cannot even run is rejected too), **equivalent** when a mutant of an operator that can be
(`operators.EQUIVALENT_BY_VALUES`: a dropped keyword, a deleted call, swapped statements, a constant)
passed and left exactly the values of the original in each lane where it passed (fingerprint.py; the
original runs twice for that, to leave out what differs between two runs of itself), and **survived**
otherwise. A mechanism mutant is never equivalent: the same numbers without the mechanism are what it
looks for; nor is a sibling, axis, flag or dtype mutant: the same numbers there mean the data cannot
tell the two apart.

Results are committed data (results.py), matched by the identities of the cell's jobs: only cells
whose code, setup, check or lane changed (or whose results are missing) run again.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace

from generator.lanes import LANES
from generator.model import CODE, PASSED, Job, Sheet, Snippet
from generator.mutate import fingerprint, judge, operators
from generator.mutate import results as store
from generator.verify.cache import Cache, digest, job_identity, key_of
from generator.verify.runner import run_jobs

MUTANT_TIMEOUT_FACTOR = 4.0  # a mutant may take this many times its original's duration (plus the grace below)
MUTANT_TIMEOUT_GRACE = 10.0


@dataclass
class Unit:
    """One code cell to mutate: its jobs (one per lane) and its mutants."""

    sheet: str
    row: str
    column: str
    jobs: list[Job]
    mutants: list[operators.Mutant]

    @property
    def identities(self) -> dict[str, str]:
        return {job.lane: job.identity for job in self.jobs}


@dataclass
class MutationReport:
    ran: int = 0  # cells mutated in this run
    jobs: int = 0  # mutant and reference jobs run
    wall: float = 0.0
    entries: list = field(default_factory=list)  # the new results.CellEntry of every cell run
    notes: list = field(default_factory=list)


def units(sheets: list[Sheet], jobs: list[Job]) -> list[Unit]:
    """The cells to mutate (code cells with a CPU job here), with their mutants."""
    by_cell: dict[tuple[str, str, str], list[Job]] = {}
    for job in jobs:
        if not job.counterexample and not job.missing:
            by_cell.setdefault(job.cell_key, []).append(job)
    found = []
    for key, cell_jobs in sorted(by_cell.items()):
        cell = cell_jobs[0].cell
        if cell.kind != CODE or cell.code is None:
            continue
        defined = _defined(cell.setup.text) if cell.setup else frozenset()
        found.append(Unit(*key, jobs=cell_jobs, mutants=operators.mutants(cell.code.text, defined_before=defined)))
    return found


def _defined(setup: str) -> frozenset[str]:
    try:
        tree = ast.parse(setup)
    except SyntaxError:
        return frozenset()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update(alias.asname or alias.name.split(".")[0] for alias in node.names)
    return frozenset(names)


def _fingerprinted(job: Job, code: str, index: int, timeout: float, runner: str | None = None, tool: str | None = None, attempt: int = 0) -> Job:
    """`job` with `code` in place of the cell's code and the fingerprint after its check (its identity
    under another worker digest or rules version when given: what `rekey` compares with); `attempt` > 0:
    a second run of the same code, under an identity of its own (not its first run's cache entry)."""
    cell = job.cell
    check_line = cell.check.line if cell.check else cell.code.line + len(cell.code.text.splitlines()) + 1
    check_text = (cell.check.text if cell.check else "") + fingerprint.FINGERPRINT
    changed = replace(cell, code=Snippet(code, cell.code.line), check=Snippet(check_text, check_line), counterexamples=())
    lane = LANES[job.lane]
    tool = tool or store.TOOL_VERSION
    marks = {"mutant": index > 0, "tool": tool} if index > 0 else {"reference": -index, "tool": tool}
    identity = job_identity(changed, lane, {**marks, "attempt": attempt} if attempt else marks, runner=runner)
    return replace(job, cell=changed, timeout=timeout, key=key_of(identity, lane), identity=identity, mutant=index, same=None)


def mutate(
    sheets: list[Sheet],
    jobs: list[Job],
    *,
    cache: Cache,
    cores: int,
    known: store.Results,
    force: bool = False,
    shard: tuple[int, int] | None = None,
    show_progress: bool = True,
    sandbox: str | None = None,
    batch: int = 60,
    on_batch=None,
) -> MutationReport:
    """Run the mutants of every cell of `jobs` whose results `known` lacks (all with `force`), `batch`
    cells at a time: `on_batch(entries, done, total)` gets each batch's results as soon as they are
    judged (the command records them then: a run stopped half-way keeps what it had judged)."""
    report = MutationReport()
    todo = [unit for unit in units(sheets, jobs) if force or not known.current(unit.sheet, unit.row, unit.column, unit.identities)]
    if shard is not None:
        index, count = shard
        todo = [unit for position, unit in enumerate(todo) if position % count == index - 1]
    recorded = known.verdicts()
    timings = cache.load_timings()
    for start in range(0, len(todo), batch):
        part = todo[start : start + batch]
        entries = _mutate_batch(part, report, cache=cache, cores=cores, recorded=recorded, timings=timings, force=force,
                                show_progress=show_progress, sandbox=sandbox)  # fmt: skip
        report.entries += entries
        report.ran += len(part)
        if on_batch is not None:
            on_batch(entries, report.ran, len(todo))
    return report


def _mutate_batch(todo: list[Unit], report: MutationReport, *, cache, cores, recorded, timings, force, show_progress, sandbox) -> list:
    """The verdicts of the mutants of `todo`'s cells (reusing `recorded` ones by key); adds its jobs,
    wall time and notes to `report`."""
    mutant_jobs: dict[tuple[int, int, str], Job] = {}  # (unit, mutant, lane) -> job
    keys: dict[tuple[int, int], str] = {}
    planned: list[Job] = []
    for u, unit in enumerate(todo):
        for m, mutant in enumerate(unit.mutants, 1):
            for job in unit.jobs:
                timeout = min(job.timeout, MUTANT_TIMEOUT_GRACE + MUTANT_TIMEOUT_FACTOR * timings.get(job.id, job.timeout))
                mutant_jobs[(u, m, job.lane)] = _fingerprinted(job, mutant.code, m, timeout)
            keys[(u, m)] = digest(sorted(mutant_jobs[(u, m, job.lane)].identity for job in unit.jobs))[:32]
            if force or keys[(u, m)] not in recorded:
                planned.extend(mutant_jobs[(u, m, job.lane)] for job in unit.jobs)
    first = run_jobs(planned, cache=cache, cores=cores, show_progress=show_progress, sandbox=sandbox) if planned else None
    report.jobs += len(planned)
    report.notes += first.notes if first else []
    # The originals run twice, fingerprinted, where a value mutant passed: what "the same values" means there.
    references: dict[tuple[int, str], tuple[Job, Job]] = {}
    for (u, m, lane), mutant_job in mutant_jobs.items():
        unit = todo[u]
        if first is not None and mutant_job.id in first.results and first.results[mutant_job.id].status == PASSED and unit.mutants[m - 1].operator in operators.EQUIVALENT_BY_VALUES and (u, lane) not in references:
            job = next(j for j in unit.jobs if j.lane == lane)
            references[(u, lane)] = (
                _fingerprinted(job, job.cell.code.text, -1, job.timeout),
                _fingerprinted(job, job.cell.code.text, -2, job.timeout),
            )
    second = run_jobs([j for pair in references.values() for j in pair], cache=cache, cores=cores, show_progress=show_progress, sandbox=sandbox) if references else None
    report.jobs += 2 * len(references)
    report.wall += (first.wall if first else 0.0) + (second.wall if second else 0.0)
    lanes_of: dict[tuple[int, int], dict] = {}
    for u, unit in enumerate(todo):
        for m, mutant in enumerate(unit.mutants, 1):
            if force or keys[(u, m)] not in recorded:
                lanes_of[(u, m)] = {
                    job.lane: judge.lane_verdict(mutant, first.results[mutant_jobs[(u, m, job.lane)].id],
                                                 (pair := references.get((u, job.lane))) and tuple(second.results[j.id] for j in pair))
                    for job in unit.jobs
                }
    _confirm_survivors(todo, lanes_of, mutant_jobs, references, first, second, report, cache=cache, cores=cores, show_progress=show_progress, sandbox=sandbox)
    entries = []
    for u, unit in enumerate(todo):
        verdicts = []
        for m, mutant in enumerate(unit.mutants, 1):
            reused = None if force else recorded.get(keys[(u, m)])
            if reused is not None:
                verdicts.append(replace(reused, operator=mutant.operator, family=mutant.family, description=mutant.description, line=mutant.line))
                continue
            lanes = lanes_of[(u, m)]
            verdicts.append(store.MutantEntry(mutant.operator, mutant.family, mutant.description, mutant.line, *judge.overall(lanes, mutant.code), key=keys[(u, m)]))
        failed = [f"{lane}: {v}" for entry in verdicts for lane, v in entry.lanes.items() if v.startswith("error")]
        if failed:  # the lane could not run some mutant: no verdict, nothing recorded, it runs again next time
            report.notes.append(f"{unit.sheet}/{unit.row} [{unit.column}] not recorded: {failed[0]}")
            continue
        entries.append(store.CellEntry(unit.sheet, unit.row, unit.column, unit.identities, tuple(verdicts)))
    return entries


def _confirm_survivors(todo, lanes_of, mutant_jobs, references, first, second, report, **run) -> None:
    """A value mutant survives a lane only when it does so twice. Where its values differed from the
    original's, it runs again, and the original two more times: a name counts only where all four runs
    of the original agree on it, and the mutant must differ from them on such a name in both of its
    runs. Otherwise its difference was the run's, not the mutant's (a lane worker's state, an address
    the fingerprint did not recognise), and it is equivalent. A second run that fails keeps the
    verdict: a mutant the check rejects only sometimes is not rejected."""
    suspects = [(u, m, lane) for (u, m), lanes in lanes_of.items() for lane, verdict in lanes.items()
                if verdict == "survived" and todo[u].mutants[m - 1].operator in operators.EQUIVALENT_BY_VALUES and (u, lane) in references]
    if not suspects:
        return
    again, more = {}, {}
    for u, m, lane in suspects:
        job = next(j for j in todo[u].jobs if j.lane == lane)
        again[(u, m, lane)] = _fingerprinted(job, todo[u].mutants[m - 1].code, m, mutant_jobs[(u, m, lane)].timeout, attempt=1)
        if (u, lane) not in more:
            more[(u, lane)] = (_fingerprinted(job, job.cell.code.text, -3, job.timeout), _fingerprinted(job, job.cell.code.text, -4, job.timeout))
    third = run_jobs([*again.values(), *(j for pair in more.values() for j in pair)], **run)
    report.jobs += len(third.results)
    report.wall += third.wall
    for (u, m, lane), job in again.items():
        runs = [fingerprint.read(r.stdout) if r.status == PASSED else None
                for r in (*(second.results[j.id] for j in references[(u, lane)]), *(third.results[j.id] for j in more[(u, lane)]))]
        repeat = third.results[job.id]
        if repeat.status != PASSED or any(r is None for r in runs):
            continue
        names = set().union(*runs)
        unstable = {name for name in names if len({r.get(name) for r in runs}) > 1}
        reference = {name: runs[0].get(name) for name in names - unstable}
        digests = [fingerprint.read(first.results[mutant_jobs[(u, m, lane)].id].stdout), fingerprint.read(repeat.stdout)]
        if all(d is not None for d in digests) and any(fingerprint.same_values(reference, unstable, d) for d in digests):
            lanes_of[(u, m)][lane] = "equivalent"


def record(folder: str, cache_dir: str, entries: list, sheets: list[Sheet] | None = None) -> store.Results:
    """Merge `entries` into the results files under a lock (shards and other runs at once each add
    theirs) and return what the files now hold; with `sheets` (the content as it is now), entries of
    cells no longer in it are dropped."""
    import fcntl
    import os

    os.makedirs(cache_dir, exist_ok=True)
    with open(os.path.join(cache_dir, "mutate.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        results = store.load(folder)
        results.add(entries)
        if entries or sheets is not None:
            store.write(folder, results, sheets)
        return results


def summary(sheets: list[Sheet], standings: dict) -> tuple[list[str], list]:
    """The lines `mutate` prints: every surviving mutant with its file:line, then the totals. Returns
    the lines and the survivors."""
    lines, survivors = [], []
    cells = {(s.id, r.id, c.column): c for s in sheets for r in s.rows() for c in r.cells}
    totals = {"killed": 0, "survived": 0, "equivalent": 0, "declared": 0, "stale": 0, "missing": 0}
    for key, state in sorted(standings.items()):
        if state.state != "current":
            totals[state.state] += 1
            continue
        totals["killed"] += state.killed
        totals["equivalent"] += state.equivalent
        totals["declared"] += len(state.declared)
        cell = cells[key]
        for mutant in state.survived:
            survivors.append((key, mutant))
            totals["survived"] += 1
            where = f"{cell.code and cell.source.path}:{cell.code.line + mutant.line - 1}"
            lanes = ", ".join(lane for lane, verdict in sorted(mutant.lanes.items()) if verdict == "survived")
            lines.append(f"{where}: {key[0]}/{key[1]} [{key[2]}] a {mutant.family} mutant survived ({lanes}): {mutant.description}")
    scored = totals["killed"] + totals["survived"]
    score = f"{100 * totals['killed'] / scored:.1f}%" if scored else "-"
    lines.append(
        f"mutants: {totals['killed']} killed, {totals['survived']} survived, {totals['equivalent']} equivalent, "
        f"{totals['declared']} declared equivalent; score {score}; cells not mutated: {totals['stale']} stale, {totals['missing']} missing"
    )
    return lines, survivors


def merge(folder: str, cache_dir: str, other: str) -> tuple[int, int]:
    """Merge the results in `other` (another checkout's content/mutants, a shard's) into `folder`: its
    entries made by the current rules and operators; (merged, left out). An entry still counts only
    while its identities are the cells' current ones, as always."""
    found = store.load(other)
    current = [entry for entry in found.entries.values()
               if entry.tools == store.current_tools() and store.ran_cleanly(entry)]  # fmt: skip
    record(folder, cache_dir, current)
    return len(current), len(found.entries) - len(current)


def rekey(folder: str, cache_dir: str, sheets: list[Sheet], jobs: list[Job], old_runner: str, old_tool: str | None = None) -> tuple[int, int]:
    """Carry recorded verdicts over a change of the worker's digest (or of the rules' version) that
    changes no behaviour, as `ledger rekey` does for the GPU ledgers: a cell's entry is re-keyed only
    when its identities are its jobs' current ones under the old digest, and when no lane verdict of
    it is an error (a lane that could not run is no verdict); each mutant's key is recomputed from
    its regenerated jobs. Returns (re-keyed, left as they were)."""
    known = store.load(folder)
    fresh, left = [], 0
    for unit in units(sheets, jobs):
        entry = known.entries.get((unit.sheet, unit.row, unit.column))
        if entry is None or entry.identities == unit.identities:
            continue
        old_ids = {job.lane: job_identity(job.cell, LANES[job.lane], None if not job.same else {"expose": job.same.value}, runner=old_runner) for job in unit.jobs}
        if entry.identities != old_ids or not store.ran_cleanly(entry) or len(entry.mutants) != len(unit.mutants):
            left += 1
            continue
        mutants = []
        for m, (recorded, mutant) in enumerate(zip(entry.mutants, unit.mutants, strict=True), 1):
            tool = old_tool or entry.tools[0]  # the rules' version the entry was made with
            old_key = digest(sorted(_fingerprinted(job, mutant.code, m, 0.0, runner=old_runner, tool=tool).identity for job in unit.jobs))[:32]
            if recorded.key != old_key:
                break
            new_key = digest(sorted(_fingerprinted(job, mutant.code, m, 0.0).identity for job in unit.jobs))[:32]
            mutants.append(replace(recorded, key=new_key))
        else:
            fresh.append(store.CellEntry(unit.sheet, unit.row, unit.column, unit.identities, tuple(mutants)))
            continue
        left += 1
    record(folder, cache_dir, fresh)
    return len(fresh), left
