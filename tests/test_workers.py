"""Lane workers as processes: stopped when their lane is done, and a dead one says why."""

from __future__ import annotations

import dataclasses

from generator.lanes import Lane
from generator.model import PASSED
from generator.verify.cache import Cache
from generator.verify.runner import run_jobs
from tests.test_gpu_safety import _jobs


def test_a_dead_workers_own_stderr_and_exit_status_are_in_the_error(tmp_path):
    prelude = (
        "import os, sys, threading\n"
        "def die():\n"
        "    sys.stderr.write('the worker ran out of something: boom\\n'); sys.stderr.flush(); os._exit(7)\n"
        "threading.Timer(3.0, die).start()\n"
    )
    lane = Lane("dying", ("json",), (), prelude=prelude)
    jobs = _jobs(lane, "import time\ntime.sleep(60)", timeout=120.0)
    report = run_jobs(jobs, cache=Cache(str(tmp_path)), cores=1, show_progress=False, lanes={lane.name: lane})
    result = report.results[jobs[0].id]
    assert result.status in ("crashed", "error"), result
    assert "boom" in result.error and "exit status 7" in result.error, result.error


def test_a_worker_with_nothing_left_to_run_is_stopped_while_others_run(tmp_path):
    quick = Lane("quick", ("json",), ())
    slow = Lane("slow", ("decimal",), ())
    waits_for_quick_to_go = """\
import os, time
scratch = os.path.dirname(os.getcwd())
def quick_worker_alive():
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            command = open(f'/proc/{pid}/cmdline', 'rb').read().decode(errors='replace')
        except OSError:
            continue
        if "verify/worker" in command and '"imports": ["json"]' in command and scratch in command:
            return True
    return False
deadline = time.time() + 30
while quick_worker_alive() and time.time() < deadline:
    time.sleep(0.2)
assert not quick_worker_alive(), "the quick lane's worker is still running with nothing to do"
"""
    jobs = _jobs(quick, "x = 1") + [
        dataclasses.replace(job, column="c-slow", lane="slow") for job in _jobs(slow, waits_for_quick_to_go, timeout=90.0)
    ]
    # sandbox off: a sandboxed cell sees only its own worker's processes, so the quick worker would look gone
    report = run_jobs(jobs, cache=Cache(str(tmp_path)), cores=2, show_progress=False, lanes={"quick": quick, "slow": slow}, sandbox="off")
    assert {job.id: report.results[job.id].status for job in jobs} == dict.fromkeys((j.id for j in jobs), PASSED), [
        report.results[job.id].error for job in jobs
    ]
