"""The progress display during verification, and the summary table after it."""

from __future__ import annotations

import sys
import time


class Progress:
    """Cells done of total, per lane: one redrawn line on a terminal, a line every few seconds otherwise."""

    def __init__(self, jobs, results, enabled: bool = True, stream=None):
        self.stream = stream or sys.stderr
        self.enabled = enabled and bool(jobs)
        self.results = results
        self.totals: dict[str, int] = {}
        self.lane_of: dict[str, str] = {}
        for job in jobs:
            self.totals[job.lane] = self.totals.get(job.lane, 0) + 1
            self.lane_of[job.id] = job.lane
        self.tty = self.stream.isatty()
        self.last = 0.0
        self.last_line = ""

    def line(self) -> str:
        done: dict[str, int] = {}
        for job_id in self.results:
            lane = self.lane_of.get(job_id)
            if lane is not None:
                done[lane] = done.get(lane, 0) + 1
        total = sum(self.totals.values())
        lanes = "  ".join(f"{lane} {done.get(lane, 0)}/{n}" for lane, n in sorted(self.totals.items()))
        return f"verify {sum(done.values())}/{total}  {lanes}"

    def update(self) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.last < (0.2 if self.tty else 5.0):
            return
        self.last = now
        self._draw()

    def _draw(self) -> None:
        line = self.line()
        if line == self.last_line:
            return
        self.last_line = line
        if self.tty:
            self.stream.write("\r\033[K" + line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def finish(self) -> None:
        if not self.enabled:
            return
        self._draw()
        if self.tty:
            self.stream.write("\n")
        self.stream.flush()


def summary_table(report) -> str:
    """Passed, failed, cached and time per lane worker, as a plain-text table."""
    header = ("lanes", "passed", "failed", "cached", "import s", "cells s")
    rows = []
    for stats in sorted(report.stats.values(), key=lambda s: sorted(s.lanes)):
        rows.append(
            (
                ", ".join(sorted(stats.lanes)),
                str(stats.passed),
                str(stats.failed),
                str(stats.cached),
                f"{stats.import_s:.1f}",
                f"{stats.cell_s:.1f}",
            )
        )
    totals = (
        "total",
        str(sum(s.passed for s in report.stats.values())),
        str(sum(s.failed for s in report.stats.values())),
        str(sum(s.cached for s in report.stats.values())),
        f"{sum(s.import_s for s in report.stats.values()):.1f}",
        f"{sum(s.cell_s for s in report.stats.values()):.1f}",
    )
    table = [header, *rows, totals]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    lines = []
    for index, row in enumerate(table):
        cells = [row[0].ljust(widths[0])] + [value.rjust(width) for value, width in zip(row[1:], widths[1:], strict=True)]
        lines.append("  ".join(cells))
        if index == 0 or index == len(table) - 2:
            lines.append("  ".join("-" * w for w in widths))
    lines.append(f"ran {report.ran} cell(s) in {report.workers} lane worker(s); wall time {report.wall:.1f} s")
    return "\n".join(lines)
