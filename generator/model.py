"""The data model: sheets, sections, rows, cells and the results of running them.

Plain frozen dataclasses. Every stage imports these; this module imports no stage.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

# Cell kinds.
CODE = "code"
TEXT = "text"
NONE = "none"



class Status(StrEnum):
    """What became of a job, from worst to best (the order used for "failures first"). The values
    are the strings the worker, the cache, the ledger and the JSON exports use."""

    CRASHED = "crashed"  # the cell's process died (signal, os._exit, the memory cap)
    TIMEOUT = "timeout"
    ERROR = "error"  # the lane could not run it (the worker failed to start or kept dying)
    FAILED = "failed"  # setup, code or check raised (for a counterexample: it was not rejected)
    STALE = "stale"  # a GPU ledger entry for an older version of the cell
    SKIPPED = "skipped"  # not verified in this build
    # A job that cannot run on this machine because a module its cell imports is not installed (e.g.
    # TensorFlow on a CUDA image): reported as such, never as an error, and never as verified.
    NOT_APPLICABLE = "not-applicable"
    PASSED = "passed"


STATUSES = tuple(Status)
PASSED = Status.PASSED
FAILED = Status.FAILED
SKIPPED = Status.SKIPPED
NOT_APPLICABLE = Status.NOT_APPLICABLE


@dataclass(frozen=True)
class Source:
    """Where a piece of content came from: a file and a 1-based line."""

    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True)
class Snippet:
    """A piece of Python from the content, with the YAML line its first line sits on."""

    text: str
    line: int


@dataclass(frozen=True)
class Counterexample:
    """A wrong snippet for a cell: the common mistake or a source's error, and why it is wrong.

    It runs in place of the cell's code, with the same setup and check, and must fail: the check
    must reject it (or, with `raises`, the code itself must raise an error matching that pattern).
    A counterexample that passes proves the check too weak.
    """

    code: Snippet
    why: str
    source: Source
    raises: str = ""


@dataclass(frozen=True)
class DeclaredMutant:
    """A surviving mutant a row declares irrelevant to its claim, with the reason (reviewed like content)."""

    description: str
    why: str
    source: Source


@dataclass(frozen=True)
class Equivalence:
    """A row's claim that its columns compute the same thing: each cell leaves `value` behind."""

    value: str
    source: Source
    rtol: float = 1e-5
    atol: float = 1e-6
    dtype: bool = False  # also require the same dtype
    columns: tuple[str, ...] = ()  # empty: every column with a code cell


@dataclass(frozen=True)
class Cell:
    """One framework's entry in a row: code that runs, a prose fact, or a missing feature."""

    column: str
    kind: str
    source: Source
    code: Snippet | None = None
    setup: Snippet | None = None
    check: Snippet | None = None
    lanes: tuple[str, ...] = ()
    text: str = ""
    url: str = ""
    reason: str = ""
    counterexamples: tuple[Counterexample, ...] = ()
    equivalent_mutants: tuple[DeclaredMutant, ...] = ()
    cpu_only: str = ""  # why the cell does not run on a GPU (shown on the page)
    gpu_only: str = ""  # why the cell means nothing on a CPU: it runs on a GPU only


@dataclass(frozen=True)
class Difference:
    """How a row's columns behave differently (a default, a dtype, a keyword), declared in the content:
    `columns` behave as `what` says, set apart from the others (empty: every column differs), and
    `checked` names the check line that proves it ('' when none does)."""

    what: str
    source: Source
    columns: tuple[str, ...] = ()
    checked: str = ""

    def between(self, a: str, b: str) -> bool:
        """Whether the difference sets column `a` apart from column `b`."""
        return not self.columns or ((a in self.columns) != (b in self.columns))


@dataclass(frozen=True)
class SeeAlso:
    """A row elsewhere that answers the same task: `sheet/row` (checked to exist when the content loads)."""

    sheet: str
    row: str
    source: Source


@dataclass(frozen=True)
class Row:
    id: str
    title: str
    source: Source
    cells: tuple[Cell, ...]
    notes: str = ""
    timeout: float = 60.0
    same: Equivalence | None = None
    differs: tuple[Difference, ...] = ()
    see_also: tuple[SeeAlso, ...] = ()


@dataclass(frozen=True)
class Section:
    id: str
    title: str
    source: Source
    rows: tuple[Row, ...]


@dataclass(frozen=True)
class Column:
    id: str
    name: str
    lanes: tuple[str, ...]
    note: str = ""


@dataclass(frozen=True)
class SheetPage:
    """A page of a sheet that is split into several: some of its sections, in order. The first page is
    `<sheet>.html`, the others `<sheet>-<id>.html`; all share the sheet's columns and controls."""

    id: str
    title: str
    sections: tuple[str, ...]  # section ids

    def path(self, sheet_id: str, first: bool) -> str:
        return f"{sheet_id}.html" if first else f"{sheet_id}-{self.id}.html"


@dataclass(frozen=True)
class Sheet:
    id: str
    title: str
    source: Source
    columns: tuple[Column, ...]
    sections: tuple[Section, ...]
    description: str = ""
    order: int = 100
    pages: tuple[SheetPage, ...] = ()  # empty: the sheet is one page

    def rows(self):
        for section in self.sections:
            yield from section.rows

    def parts(self) -> list[tuple[SheetPage, str, tuple[Section, ...]]]:
        """(page, path, its sections) for each page of the sheet: one, `<sheet>.html`, unless split."""
        if not self.pages:
            return [(SheetPage("", self.title, tuple(s.id for s in self.sections)), f"{self.id}.html", self.sections)]
        by_id = {section.id: section for section in self.sections}
        return [(page, page.path(self.id, index == 0), tuple(by_id[s] for s in page.sections if s in by_id)) for index, page in enumerate(self.pages)]

    def page_of(self) -> dict[str, str]:
        """Each row's and section's page path (row id or 'section-<id>' -> path)."""
        found = {}
        for _, path, sections in self.parts():
            for section in sections:
                found[f"section-{section.id}"] = path
                for row in section.rows:
                    found[row.id] = path
        return found


@dataclass(frozen=True)
class Job:
    """One cell (or one of its counterexamples) to run in one lane.

    `identity` names what runs: the cell's code, setup, check and expectations, the lane's
    definition, the worker's code and the device class. `key` (the cache key) adds this machine's
    environment: Python and the lane's package versions. A ledger from another machine is matched
    by identity, the local cache by key.
    """

    sheet: str
    row: str
    column: str
    lane: str
    cell: Cell
    timeout: float
    key: str
    identity: str = ""
    counterexample: int = 0  # 1-based index into the cell's counterexamples; 0 for the cell itself
    raises: str = ""  # a counterexample's expected error (pattern); '' when the check must reject it
    same: Equivalence | None = None  # the row's equivalence claim, when this cell takes part
    missing: tuple[str, ...] = ()  # modules the cell imports that this machine lacks
    mutant: int = 0  # `mutate`: 1-based index of the mutant run instead of the code; -1, -2 the original's two fingerprinted runs

    @property
    def id(self) -> str:
        base = f"{self.sheet}/{self.row}/{self.column}@{self.lane}"
        if self.mutant:
            return f"{base}!mut{self.mutant}" if self.mutant > 0 else f"{base}!ref{-self.mutant}"
        return f"{base}!not{self.counterexample}" if self.counterexample else base

    @property
    def expose(self) -> str:
        """The name of the value the cell leaves for its row's equivalence check ('' if none)."""
        return self.same.value if self.same is not None and not self.counterexample and not self.mutant else ""

    @property
    def cell_key(self) -> tuple[str, str, str]:
        return (self.sheet, self.row, self.column)


@dataclass(frozen=True)
class Result:
    """What running one job produced."""

    status: Status
    duration: float = 0.0
    stdout: str = ""
    stderr: str = ""
    output_cut: bool = False
    error: str = ""
    warnings: tuple[dict, ...] = ()
    versions: dict = field(default_factory=dict)
    device: str = ""
    date: str = ""
    cached: bool = False
    stage: str = ""  # where a failure happened: setup, code or check
    detail: str = ""  # a counterexample's rejection, or how a cell showed it used the device
    value: dict | None = None  # the exposed value of an equivalence row: shape, dtype, data
    used_device: bool | None = None  # on a GPU: whether the cell did work there (None on CPU)

    def to_json(self, fields=None) -> dict:
        """The result as JSON data: every field, or those named in `fields` (the one serialiser of a
        result: cache entries, ledgers, bundles and the site's exports all take theirs from here)."""
        data = {
            "status": self.status,
            "duration": round(self.duration, 4),
            "stdout": self.stdout,
            "stderr": self.stderr,
            "output_cut": self.output_cut,
            "error": self.error,
            "warnings": list(self.warnings),
            "versions": self.versions,
            "device": self.device,
            "date": self.date,
            "stage": self.stage,
            "detail": self.detail,
            "value": self.value,
            "used_device": self.used_device,
        }
        return data if fields is None else {name: data[name] for name in fields}

    @classmethod
    def from_json(cls, data: dict, cached: bool = False) -> Result:
        return cls(
            status=Status(data["status"]),
            duration=float(data.get("duration", 0.0)),
            stdout=str(data.get("stdout", "")),
            stderr=str(data.get("stderr", "")),
            output_cut=bool(data.get("output_cut", False)),
            error=str(data.get("error", "")),
            warnings=tuple(data.get("warnings", ())),
            versions=dict(data.get("versions", {})),
            device=str(data.get("device", "")),
            date=str(data.get("date", "")),
            cached=cached,
            stage=str(data.get("stage", "")),
            detail=str(data.get("detail", "")),
            value=data.get("value") if isinstance(data.get("value"), dict) else None,
            used_device=data.get("used_device") if isinstance(data.get("used_device"), bool) else None,
        )
