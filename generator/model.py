"""The data model: sheets, sections, rows, cells and the results of running them.

Plain frozen dataclasses. Every stage imports these; this module imports no stage.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Cell kinds.
CODE = "code"
TEXT = "text"
NONE = "none"

# Result statuses, from worst to best (the order used for "failures first").
STATUSES = ("crashed", "timeout", "error", "failed", "stale", "skipped", "passed")
PASSED = "passed"


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


@dataclass(frozen=True)
class Row:
    id: str
    title: str
    source: Source
    cells: tuple[Cell, ...]
    notes: str = ""
    timeout: float = 60.0


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
class Sheet:
    id: str
    title: str
    source: Source
    columns: tuple[Column, ...]
    sections: tuple[Section, ...]
    description: str = ""
    order: int = 100

    def rows(self):
        for section in self.sections:
            yield from section.rows


@dataclass(frozen=True)
class Job:
    """One cell to run in one lane. `key` is the cache key of the run."""

    sheet: str
    row: str
    column: str
    lane: str
    cell: Cell
    timeout: float
    key: str

    @property
    def id(self) -> str:
        return f"{self.sheet}/{self.row}/{self.column}@{self.lane}"


@dataclass(frozen=True)
class Result:
    """What running one job produced."""

    status: str
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

    def to_json(self) -> dict:
        return {
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
        }

    @classmethod
    def from_json(cls, data: dict, cached: bool = False) -> Result:
        return cls(
            status=str(data["status"]),
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
        )
