"""The few exceptions the generator raises, and how content errors are shown."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import lru_cache


@dataclass(frozen=True, order=True)
class ContentError:
    """One problem in the content, at a file and 1-based line."""

    path: str
    line: int
    message: str
    quote: bool = field(default=True, compare=False)  # False: the file is not to be read (it leads outside the content)
    root: bool = field(default=False, compare=False)  # a cause of other errors (invalid YAML, a duplicate key): listed first

    def format(self) -> str:
        quoted = _line_of(self.path, self.line) if self.quote else None
        head = f"{self.path}:{self.line}: {self.message}"
        return f"{head}\n    {self.line} | {quoted}" if quoted is not None else head


class ContentInvalid(Exception):
    """The content has errors; `errors` lists every one of them."""

    def __init__(self, errors: list[ContentError]):
        # root causes first (a duplicate key drops a value, and the errors about what it held follow), then by place
        self.errors = sorted(set(errors), key=lambda error: (not error.root, error))
        super().__init__(f"{len(self.errors)} content error(s)")

    def report(self) -> str:
        lines = [error.format() for error in self.errors]
        lines.append(f"{len(self.errors)} error(s) in the content; nothing was built.")
        return "\n".join(lines)


class UnknownRow(ValueError):
    """A row id given on the command line (--only, --explain, ROW=) that names no row of the content."""


@lru_cache(maxsize=64)
def _lines(path: str, stamp: tuple[int, int]) -> tuple[str, ...] | None:
    """The file's lines as they were at `stamp` (its mtime and size): an edited file is read again
    (`serve` reports the errors of one file many times, and must quote what is there now)."""
    try:
        with open(path, encoding="utf-8") as handle:
            return tuple(handle.read().splitlines())
    except (OSError, UnicodeDecodeError):
        return None


def _line_of(path: str, line: int) -> str | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    lines = _lines(path, (stat.st_mtime_ns, stat.st_size))
    if lines is None or not 1 <= line <= len(lines):
        return None
    return lines[line - 1].rstrip()
