"""Cross-column equivalence: a row that claims its columns compute the same thing proves it.

Each participating cell leaves a value under the row's `same.value` name; the worker turns it
into a plain array record (shape, dtype, data). Here the records of every column and lane are
compared with the row's tolerances. When they differ, the cells outside the largest group of
agreeing values are blamed (all of them when no group is a strict majority), with the difference.
"""

from __future__ import annotations

from dataclasses import dataclass

from generator.model import PASSED, Job, Result


@dataclass(frozen=True)
class Outcome:
    """The equivalence check of one row."""

    proven: bool  # every participating run passed and all values agree
    runs: int  # how many (column, lane) values took part
    columns: tuple[str, ...]
    blamed: frozenset = frozenset()  # column ids whose value differs
    message: str = ""


def to_array(record: dict):
    import numpy as np  # here: a build whose rows claim no equivalence never imports NumPy

    data = np.asarray(record["data"], dtype=np.float64) if record["data"] else np.zeros(0)
    return data.reshape(record["shape"])


def _same(a: dict, b: dict, same) -> tuple[bool, str]:
    import numpy as np

    if tuple(a["shape"]) != tuple(b["shape"]):
        return False, f"shape {tuple(a['shape'])} vs {tuple(b['shape'])}"
    if same.dtype and a["dtype"] != b["dtype"]:
        return False, f"dtype {a['dtype']} vs {b['dtype']}"
    x, y = to_array(a), to_array(b)
    if np.allclose(x, y, rtol=same.rtol, atol=same.atol, equal_nan=True):
        return True, ""
    diff = np.abs(x - y)
    where = np.unravel_index(int(np.nanargmax(diff)), diff.shape) if diff.size else ()
    return False, f"max abs difference {float(np.nanmax(diff)):.3g} at {tuple(int(i) for i in where)} (rtol {same.rtol:g}, atol {same.atol:g})"


def compare(jobs: list[Job], results: dict[str, Result]) -> dict[tuple[str, str], Outcome]:
    rows: dict[tuple[str, str], list[tuple[Job, Result | None]]] = {}
    for job in jobs:
        if job.expose:
            rows.setdefault((job.sheet, job.row), []).append((job, results.get(job.id)))
    outcomes = {}
    for key, runs in rows.items():
        same = runs[0][0].same
        columns = tuple(dict.fromkeys(job.column for job, _ in runs))
        values = [(job, result.value) for job, result in runs if result is not None and result.status == PASSED and result.value]
        if len(values) < len(runs) or len(values) < 2:
            outcomes[key] = Outcome(False, len(values), columns)  # not every cell ran: nothing proven, nobody blamed
            continue
        groups: list[list[tuple[Job, dict]]] = []
        for job, value in values:
            for group in groups:
                if _same(group[0][1], value, same)[0]:
                    group.append((job, value))
                    break
            else:
                groups.append([(job, value)])
        if len(groups) == 1:
            outcomes[key] = Outcome(True, len(values), columns)
            continue
        groups.sort(key=len, reverse=True)
        majority = groups[0] if len(groups[0]) * 2 > len(values) else []
        reference = (majority or groups[0])[0]
        odd = [(job, value) for job, value in values if all(job is not j for j, _ in majority)]
        lines = []
        for job, value in odd:
            if job is reference[0]:
                continue
            lines.append(f"{job.column}@{job.lane} differs from {reference[0].column}@{reference[0].lane}: {_same(reference[1], value, same)[1]}")
        message = f"the columns do not compute the same '{same.value}': " + "; ".join(lines)
        outcomes[key] = Outcome(False, len(values), columns, frozenset(job.column for job, _ in odd), message)
    return outcomes
