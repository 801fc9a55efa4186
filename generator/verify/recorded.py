"""Runs recorded in a committed ledger: a GPU machine's (`verify --device cuda`, gpu.py) and an
older-release environment's (`verify --environment NAME`, environments.py). One implementation for
both: every ledger of the folder must be readable before anything runs (a ledger costs a run that is
rarely at hand), the jobs run, the ledger is written keeping the entries of jobs not run. Returns a
report object; the command line prints it and chooses the exit status.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from generator.lanes import LANES
from generator.model import NOT_APPLICABLE, PASSED, Job
from generator.verify import ledger
from generator.verify.cache import Cache
from generator.verify.runner import RunReport, run_jobs


@dataclass
class RecordedRun:
    """What a recorded run did: its jobs, the runner's report and the ledger it wrote."""

    name: str  # the machine or the environment: the ledger's file name
    path: str
    jobs: list[Job]
    report: RunReport

    @property
    def failed(self) -> list[Job]:
        """The jobs that neither passed nor could not apply here."""
        return [job for job in self.jobs if job.id in self.report.results and self.report.results[job.id].status not in (PASSED, NOT_APPLICABLE)]


def run_and_record(
    jobs: list[Job],
    folder: str,
    name: Callable[[RunReport], str],
    *,
    cache: Cache,
    cores: int,
    force: bool = False,
    show_progress: bool = True,
    sandbox: str | None = None,
) -> RecordedRun:
    """Run `jobs` and write their results to `folder`/<name(report)>.json; ContentInvalid, before
    anything runs, when a ledger there cannot be read whole."""
    ledger.load_all(folder)
    report = run_jobs(jobs, cache=cache, cores=max(1, cores), force=force, show_progress=show_progress, lanes=LANES, sandbox=sandbox)
    machine = name(report)
    path = os.path.join(folder, f"{machine}.json")
    ledger.write(path, machine, jobs, report.results)
    return RecordedRun(machine, path, jobs, report)
