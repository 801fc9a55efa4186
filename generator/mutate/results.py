"""Mutation results as committed data: `content/mutants/<sheet>.json`, matched by identity.

`make mutate` writes them; the build only reads them, like the GPU ledgers and the older-release runs.
A cell's entry holds the identities of its jobs (one per lane) when it was mutated, and each mutant's
verdict with a key (the digest of the mutant's jobs' identities). The entry counts while those
identities equal the cell's current ones and the entry was made by the current rules (`TOOL_VERSION`:
fingerprint and judging) and operators (`OPERATORS_VERSION`); otherwise it is stale and the cell shows
as awaiting a mutation run. The versions are the file's (`tool`, `operators`), except for a cell that
names its own (`tools`): a run of some rows after an operator change makes only those cells current,
and the rest of the sheet stays stale until they run too. Re-running a stale cell reuses the verdict of every mutant whose key is
already recorded: a new operator runs only its own mutants. A file that cannot be read stops the run with its
file and line: it is never rewritten from a partial view.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from dataclasses import dataclass, field

from generator.errors import ContentError, ContentInvalid
from generator.files import atomic_write
from generator.model import CODE, Sheet
from generator.verify.canonical import module_digest

FORMAT = 1
VERDICTS = ("killed", "survived", "equivalent")


_HERE = os.path.dirname(os.path.abspath(__file__))
# What makes the mutants and judges them: a change to it makes every entry stale.
def _digest(names) -> str:
    """The digest of these modules' canonical forms (verify/canonical.py): comments and prose change nothing."""
    return hashlib.sha256("".join(module_digest(os.path.join(_HERE, name)) for name in names).encode()).hexdigest()[:16]


TOOL_VERSION = _digest(("fingerprint.py", "judge.py"))
# What makes the mutants: a change to it makes every cell stale, but verdicts are reused by key.
OPERATORS_VERSION = _digest(("operators.py", "edits.py", "loops.py", "tables.py"))


@dataclass(frozen=True)
class MutantEntry:
    operator: str
    family: str
    description: str
    line: int
    verdict: str  # killed, survived or equivalent (over every lane)
    lanes: dict  # lane -> "killed: why" | "survived" | "equivalent"
    code: str = ""  # kept for survivors and equivalents (the report shows them)
    key: str = ""  # the digest of the identities of the mutant's jobs: a verdict is reused by it

    def to_json(self) -> dict:
        data = {"operator": self.operator, "family": self.family, "description": self.description, "line": self.line,
                "verdict": self.verdict, "lanes": dict(sorted(self.lanes.items())), "key": self.key}  # fmt: skip
        if self.code:
            data["code"] = self.code
        return data


_LANE_FAILURES = ("the lane could not start", "the lane worker")


def ran_cleanly(entry) -> bool:
    """No lane verdict of the entry is a lane that could not run (an error, or a kill recorded for one
    by a run before lane errors were told apart: `killed: error: the lane could not start…`)."""
    return not any(v.startswith("error") or any(f in v for f in _LANE_FAILURES) for m in entry.mutants for v in m.lanes.values())


def current_tools() -> tuple[str, str]:
    return (TOOL_VERSION, OPERATORS_VERSION)


@dataclass(frozen=True)
class CellEntry:
    sheet: str
    row: str
    column: str
    identities: dict  # lane -> job identity when it was mutated
    mutants: tuple
    tools: tuple = field(default_factory=current_tools)  # (TOOL_VERSION, OPERATORS_VERSION) it was made with

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.sheet, self.row, self.column)

    def to_json(self) -> dict:
        return {"row": self.row, "column": self.column, "identities": dict(sorted(self.identities.items())),
                "mutants": [m.to_json() for m in self.mutants], "tools": list(self.tools)}  # fmt: skip


@dataclass
class Results:
    entries: dict = field(default_factory=dict)  # (sheet, row, column) -> CellEntry

    def current(self, sheet: str, row: str, column: str, identities: dict) -> CellEntry | None:
        entry = self.entries.get((sheet, row, column))
        if entry is None or entry.identities != identities or entry.tools != current_tools():
            return None
        return entry

    def verdicts(self) -> dict:
        """Every recorded mutant by its key (the key holds the rules' version: a match is reusable)."""
        return {mutant.key: mutant for entry in self.entries.values() for mutant in entry.mutants if mutant.key}

    def add(self, entries) -> None:
        for entry in entries:
            self.entries[entry.key] = entry


def load(folder: str) -> Results:
    """Every `<sheet>.json` in `folder`, strictly: a malformed file is a content error with file:line."""
    results, errors = Results(), []
    if not os.path.isdir(folder):
        return results
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".json"):
            continue
        path = os.path.join(folder, name)
        try:
            with open(path, encoding="utf-8") as handle:
                data = json.load(handle)
        except json.JSONDecodeError as exc:
            errors.append(ContentError(path, exc.lineno, f"invalid mutation results JSON: {exc.msg}"))
            continue
        except OSError as exc:
            errors.append(ContentError(path, 1, f"cannot read the mutation results: {exc}"))
            continue
        problem = _validate(data, name[: -len(".json")])
        if problem:
            errors.append(ContentError(path, 1, f"malformed mutation results: {problem}"))
            continue
        sheet = data["sheet"]
        for cell in explicit_cells(data):
            mutants = tuple(MutantEntry(m["operator"], m["family"], m["description"], m["line"], m["verdict"], m["lanes"], m.get("code", ""), m["key"])
                            for m in cell["mutants"])  # fmt: skip
            entry = CellEntry(sheet, cell["row"], cell["column"], cell["identities"], mutants, tuple(cell["tools"]))
            results.entries[entry.key] = entry
    if errors:
        raise ContentInvalid(errors)
    return results


def _validate(data, sheet: str) -> str:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return f"expected an object with format {FORMAT}"
    if data.get("sheet") != sheet or not isinstance(data.get("tool"), str) or not isinstance(data.get("operators"), str) or not isinstance(data.get("cells"), list):
        return f"needs 'sheet' (the file's name, {sheet!r}), 'tool' and 'operators' (strings) and 'cells' (list)"
    for cell in data["cells"]:
        if not isinstance(cell, dict) or not {"row", "column", "identities", "mutants"} <= cell.keys():
            return "a cell lacks one of row, column, identities, mutants"
        if not isinstance(cell["identities"], dict) or not isinstance(cell["mutants"], list):
            return f"{cell['row']}/{cell['column']}: identities must be an object and mutants a list"
        tools = cell.get("tools", ["", ""])
        if not isinstance(tools, list) or len(tools) != 2 or not all(isinstance(t, str) for t in tools):
            return f"{cell['row']}/{cell['column']}: tools must be [tool, operators] (two strings)"
        for mutant in cell["mutants"]:
            missing = {"operator", "family", "description", "line", "verdict", "lanes", "key"} - set(mutant if isinstance(mutant, dict) else ())
            if missing:
                return f"{cell['row']}/{cell['column']}: a mutant lacks {sorted(missing)}"
            if mutant["verdict"] not in VERDICTS:
                return f"{cell['row']}/{cell['column']}: unknown verdict {mutant['verdict']!r} (one of {', '.join(VERDICTS)})"
    return ""


def file_text(data: dict) -> str:
    """A sheet's results file as committed (the git merge driver writes it the same way)."""
    return json.dumps(data, indent=1, sort_keys=False, ensure_ascii=False) + "\n"


def explicit_cells(data: dict) -> list[dict]:
    """The file's cells, each with its own `tools` ([tool, operators]: the file's where it names none)."""
    return [{**cell, "tools": list(cell.get("tools", (data["tool"], data["operators"])))} for cell in data["cells"]]


def compact(sheet: str, cells: list[dict]) -> dict:
    """A sheet's file from cells that each name their `tools`: the versions most of them were made
    with become the file's, and only a cell made with others keeps its own. (A file that a run left
    alone is written back as it was.)"""
    counts = Counter(tuple(cell["tools"]) for cell in cells)
    head = max(sorted(counts), key=counts.__getitem__) if counts else current_tools()
    out = []
    for cell in cells:
        own = tuple(cell["tools"])
        cell = {name: value for name, value in cell.items() if name != "tools"}
        if own != head:
            cell["tools"] = list(own)
        out.append(cell)
    return {"format": FORMAT, "sheet": sheet, "tool": head[0], "operators": head[1], "cells": out}


def write(folder: str, results: Results, sheets: list[Sheet] | None = None) -> list[str]:
    """Write the file of every sheet that has entries; with `sheets`, entries of cells no longer in that
    content are dropped (give the content as it is now: a long run's view of it may lack rows merged
    since, whose entries would be lost). Returns the paths written (only those whose text changed)."""
    present = None if sheets is None else {(s.id, r.id, c.column) for s in sheets for r in s.rows() for c in r.cells if c.kind == CODE}
    written = []
    for sheet in sorted({key[0] for key in results.entries}):
        cells = [results.entries[key] for key in sorted(results.entries) if key[0] == sheet and (present is None or key in present)]
        text = file_text(compact(sheet, [c.to_json() for c in cells]))
        path = os.path.join(folder, f"{sheet}.json")
        try:
            with open(path, encoding="utf-8") as handle:
                if handle.read() == text:
                    continue
        except OSError:
            pass
        os.makedirs(folder, exist_ok=True)
        atomic_write(path, text)
        written.append(path)
    return written


# --- what the site shows ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CellMutation:
    """A cell's mutation standing as the page shows it."""

    state: str  # "current", "stale" (the cell or the tool changed since) or "missing"
    killed: int = 0
    survived: tuple = ()  # MutantEntry, not declared
    equivalent: int = 0
    declared: tuple = ()  # (MutantEntry, why)
    by_family: dict = field(default_factory=dict)  # family -> (killed, survived)
    by_operator: dict = field(default_factory=dict)  # operator -> (generated, killed)
    equivalent_names: frozenset = frozenset()  # descriptions of the mutants judged equivalent by their values
    timed_out_names: frozenset = frozenset()  # descriptions of the killed mutants that only the clock killed

    @property
    def scored(self) -> int:
        return self.killed + len(self.survived)


def standing(sheets: list[Sheet], jobs, results: Results) -> dict:
    """(sheet, row, column) -> CellMutation for every code cell with CPU jobs."""
    identities: dict = {}
    cells: dict = {}
    for job in jobs:
        if not job.counterexample and not job.missing:
            identities.setdefault(job.cell_key, {})[job.lane] = job.identity
            cells[job.cell_key] = job.cell
    out = {}
    for key, ids in identities.items():
        entry = results.entries.get(key)
        if entry is None:
            out[key] = CellMutation("missing")
            continue
        if entry.identities != ids or entry.tools != current_tools():
            out[key] = CellMutation("stale")
            continue
        declared = {d.description: d.why for d in cells[key].equivalent_mutants}
        killed = equivalent = 0
        survived, kept, same, clock = [], [], set(), set()
        families: dict = {}
        operators: dict = {}
        for mutant in entry.mutants:
            generated, dead = operators.get(mutant.operator, (0, 0))
            operators[mutant.operator] = (generated + 1, dead + (mutant.verdict == "killed"))
            if mutant.verdict == "equivalent":
                equivalent += 1
                same.add(mutant.description)
                continue
            if mutant.verdict == "survived" and mutant.description in declared:
                kept.append((mutant, declared[mutant.description]))
                continue
            k, s = families.get(mutant.family, (0, 0))
            if mutant.verdict == "killed":
                killed += 1
                families[mutant.family] = (k + 1, s)
                if all(v.startswith(("killed: timeout", "equivalent")) for v in mutant.lanes.values()):
                    clock.add(mutant.description)
            else:
                survived.append(mutant)
                families[mutant.family] = (k, s + 1)
        out[key] = CellMutation("current", killed, tuple(survived), equivalent, tuple(kept), families, operators, frozenset(same), frozenset(clock))
    return out


def stale_declarations(sheets: list[Sheet], standings: dict) -> list[ContentError]:
    """Declared equivalent mutants that match no surviving mutant of a current entry: the code changed
    and the declaration names a mutant that no longer exists, or it now dies. A declared mutant that the
    last run judged equivalent by its values is not one: the tool agrees that it changes nothing, and
    the same mutant can be judged equivalent in one run and survive in the next (a value that differs
    between the original's own two runs is left out of the comparison only when it differed), so
    dropping the declaration would fail a later run. Nor is one that only the clock killed: a mutant
    that is correct but slower (torch.compile's default backend for backend='eager', compiling for
    seconds) passes in one run and runs past the cell's timeout in another."""
    errors = []
    for sheet in sheets:
        for row in sheet.rows():
            for cell in row.cells:
                state = standings.get((sheet.id, row.id, cell.column))
                if not cell.equivalent_mutants or state is None or state.state != "current":
                    continue
                live = {mutant.description for mutant, _ in state.declared} | state.equivalent_names | state.timed_out_names
                for declared in cell.equivalent_mutants:
                    if declared.description not in live:
                        errors.append(ContentError(declared.source.path, declared.source.line,
                                                   f"declared equivalent mutant {declared.description!r} is not a surviving mutant of this cell (it is killed now, or the code changed)"))  # fmt: skip
    return errors
