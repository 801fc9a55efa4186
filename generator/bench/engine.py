"""`make bench`: how close verification comes to the machine's speed floor, and how the build scales.

Prints, from one run on this machine:
- a cold verification of all content (empty cache): each lane worker's import time and cell time,
  the floor max(longest lane, sum of lanes / cores), the wall time and wall / floor;
- the same jobs in a shared-kernel peer (peer.py: one interpreter per lane, no isolation), and the
  ratio of the two cold walls, measured in one run;
- the two engines again at the same time, one core each (side_by_side.py), so that the machine's
  drift falls on both: the ratio of their walls and of their CPU times;
- what a cell costs per lane outside its own work: empty cells and a first framework operation
  (runtime start, a first compile) in both engines, one at a time;
- a build with nothing changed (every cell cached), as a whole `python -m generator build`;
- a build after one row changed: which cells ran;
- load + check + render of generated sheets of 1,000 to 10,000 rows (text and none cells only).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from generator.bench import side_by_side
from generator.bench.peer import describe, run_peer, tally
from generator.lanes import LANES
from generator.load import content
from generator.render import html as render
from generator.verify.cache import Cache
from generator.verify.runner import run_jobs
from generator.verify.verification import Verification, judge, plan, verify

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def cold_verification(content_dir: str, cores: int) -> tuple[dict, str]:
    """Verify everything with an empty cache; return the figures and the cache dir it filled."""
    sheets = content.load(content_dir)
    cache_dir = tempfile.mkdtemp(prefix="mlsheets-bench-cache-")
    started = time.perf_counter()
    verification = verify(sheets, cache=Cache(cache_dir), cores=cores, show_progress=False)
    wall = time.perf_counter() - started
    lanes = []
    for key, stats in verification.report.stats.items():
        lanes.append({"key": key, "lanes": ", ".join(sorted(stats.lanes)), "import_s": stats.import_s, "cell_s": stats.cell_s,
                      "process_s": stats.process_s, "cells": stats.passed + stats.failed})
    totals = [lane["import_s"] + lane["cell_s"] for lane in lanes]
    floor = max(max(totals), sum(totals) / cores)
    figures = {
        "lanes": sorted(lanes, key=lambda lane: -(lane["import_s"] + lane["cell_s"])),
        "floor": floor,
        "wall": wall,
        "ratio": wall / floor,
        "failures": len(verification.failures()),
        "cells": len(plan(sheets)),
    }
    return figures, cache_dir


def shared_kernel_peer(content_dir: str, cache_dir: str, cores: int):
    """The same jobs in shared kernels (peer.py), longest lane first by the cold run's timings; the
    jobs come back with the report, to tally its verdicts against."""
    timings = Cache(cache_dir).load_timings()
    jobs = plan(content.load(content_dir))
    return jobs, run_peer(jobs, LANES, cores, estimate=lambda job: timings.get(job.id, 1.0))


# The cheapest cell that starts each lane's runtime: a fresh process pays this before any work.
FIRST_OP = {
    "python": "import numpy as np\nx = np.ones(2) + 1",
    "torch": "import torch\nx = torch.ones(2) + 1",
    "jax": "import jax.numpy as jnp\nx = jnp.ones(2) + 1",
    "tensorflow": "import tensorflow as tf\nx = tf.ones(2) + 1",
    "tf1": "import tensorflow.compat.v1 as tf\nwith tf.Session() as session:\n    x = session.run(tf.ones(2) + 1)",
    "keras@jax": "import keras\nx = keras.ops.ones(2) + 1",
    "keras@torch": "import keras\nx = keras.ops.ones(2) + 1",
    "keras@tensorflow": "import keras\nx = keras.ops.ones(2) + 1",
    "pytensor": "import pytensor\nimport pytensor.tensor as pt\nv = pt.vector()\nx = pytensor.function([v], v + 1)([1.0, 2.0])",
}


def cell_costs(lanes: list[str], cells: int = 8) -> list[dict]:
    """Per lane, the median wall of an empty cell and of a first-operation cell, ours (a forked
    process each) and the peer's (exec in a warm kernel), one cell at a time."""
    root = tempfile.mkdtemp(prefix="mlsheets-bench-costs-")
    try:
        folder = os.path.join(root, "costs")
        os.makedirs(folder)
        columns = [lane for lane in lanes if lane in FIRST_OP]
        rows = []
        for i in range(2 * cells):
            rows += [f"  - id: {'empty' if i < cells else 'first-op'}-{i}", f"    title: cell {i}", "    cells:"]
            for lane in columns:
                code = f"x = {i}" if i < cells else FIRST_OP[lane]
                rows.append(f"      {_column(lane)}: {{code: {json.dumps(code)}, check: \"assert x is not None\"}}")
        with open(os.path.join(folder, "s.yaml"), "w", encoding="utf-8") as handle:
            handle.write("id: s\ntitle: Costs\nrows:\n" + "\n".join(rows) + "\n")
        with open(os.path.join(folder, "sheet.yaml"), "w", encoding="utf-8") as handle:
            handle.write("id: costs\ntitle: Costs\ncolumns:\n")
            handle.writelines(f"  - {{id: {_column(lane)}, name: {_column(lane)}, lanes: [{lane}]}}\n" for lane in columns)
            handle.write("sections: [s.yaml]\n")
        jobs = [job for job in plan(content.load(root)) if not job.missing]
        cache = Cache(os.path.join(root, "cache"))
        ours = run_jobs(jobs, cache=cache, cores=1, show_progress=False, force=True)
        walls = cache.load_timings()
        peer = run_peer(jobs, LANES, 1)
        table = []
        for lane in columns:
            mine = [job for job in jobs if job.lane == lane]
            if not mine or any(ours.results[job.id].status != "passed" for job in mine):
                continue
            empty = [job.id for job in mine if "/empty-" in job.id]
            first = [job.id for job in mine if "/first-op-" in job.id]
            table.append({
                "lane": lane,
                "ours_empty_ms": 1000 * statistics.median(walls[i] for i in empty),
                "ours_first_ms": 1000 * statistics.median(walls[i] for i in first),
                "peer_empty_ms": 1000 * statistics.median(peer.durations.get(i, 0.0) for i in empty),
                "peer_first_ms": 1000 * statistics.median(peer.durations.get(i, 0.0) for i in first),
            })
        return table
    finally:
        shutil.rmtree(root, ignore_errors=True)


def print_side_by_side(content_dir: str) -> None:
    both = side_by_side.measure(content_dir)
    if both is None:
        print("\nside by side: skipped, fewer than two cores here")
        return
    ours, peer = both["ours"], both["peer"]
    print(f"\nside by side: the same {ours['cells']} single-process cells, cold, both engines started together, each on one "
          f"core of its own (ours on CPU {ours['cpus'][0]}, the peer on CPU {peer['cpus'][0]}): a drift of the machine falls on both")
    print(f"{'engine':8} {'wall s':>8} {'CPU s':>8}  verdicts")
    for engine in (ours, peer):
        print(f"{engine['engine']:8} {engine['wall']:8.2f} {engine['cpu_s']:8.2f}  {describe(engine['counts'])}")
    print(f"{'lane worker':40} {'ours in cells s':>15} {'peer in cells s':>15}")
    for key in sorted(ours["cell_s"], key=lambda key: -ours["cell_s"][key]):
        print(f"{_lane_names(key):40} {ours['cell_s'][key]:15.2f} {peer['cell_s'].get(key, 0.0):15.2f}")
    print(f"side by side, ours / shared-kernel peer: wall {ours['wall']:.2f} / {peer['wall']:.2f} = {ours['wall'] / peer['wall']:.3f}, "
          f"CPU {ours['cpu_s']:.2f} / {peer['cpu_s']:.2f} = {ours['cpu_s'] / peer['cpu_s']:.3f}  (goal <= 1.0)")


def _column(lane: str) -> str:
    return lane.replace("@", "-")


def _lane_names(key: str) -> str:
    return ", ".join(sorted(lane.name for lane in LANES.values() if lane.worker_key == key)) or key


def unchanged_build(content_dir: str, cache_dir: str, repeats: int = 5) -> list[float]:
    """Wall times of a whole `python -m generator build` with every cell cached.

    One build first, untimed: it is the "first build" whose second one we time (it renders the
    pages and fills the cache of highlighted code), as a second `make build` would find it.
    """
    times = []
    out = tempfile.mkdtemp(prefix="mlsheets-bench-site-")
    command = [sys.executable, "-m", "generator", "build", "--content", content_dir, "--out", os.path.join(out, "site"), "--cache", cache_dir, "--quiet", "--no-benchmarks"]
    try:
        for attempt in range(repeats + 1):
            started = time.perf_counter()
            subprocess.run(command, cwd=ROOT, check=True, capture_output=True)
            if attempt:
                times.append(time.perf_counter() - started)
        imported = subprocess.run([command[0], "-X", "importtime", *command[1:]], cwd=ROOT, check=True, capture_output=True, text=True).stderr
        frameworks = sorted({name for name in ("torch", "jax", "tensorflow", "keras", "pytensor") if f" {name}\n" in imported})
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return times, frameworks


def one_row_changed(content_dir: str, cache_dir: str, cores: int) -> dict:
    """Edit one code cell in a copy of the content; verify; report what ran."""
    copy = tempfile.mkdtemp(prefix="mlsheets-bench-content-")
    try:
        shutil.copytree(content_dir, copy, dirs_exist_ok=True)
        sheets = content.load(copy)
        target = next(row for sheet in sheets for row in sheet.rows() if any(c.kind == "code" for c in row.cells))
        cell = next(c for c in target.cells if c.kind == "code")
        with open(cell.source.path, encoding="utf-8") as handle:
            lines = handle.read().split("\n")
        index = cell.code.line - 1
        indent = lines[index][: len(lines[index]) - len(lines[index].lstrip())]
        lines.insert(index, f"{indent}# edited by the benchmark")
        with open(cell.source.path, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines))
        sheets = content.load(copy)
        started = time.perf_counter()
        verification = verify(sheets, cache=Cache(cache_dir), cores=cores, show_progress=False)
        wall = time.perf_counter() - started
        report = verification.report
        return {"row": target.id, "column": cell.column, "lanes": len(cell.lanes), "ran": report.ran, "workers": report.workers, "wall": wall}
    finally:
        shutil.rmtree(copy, ignore_errors=True)


def generated_sheet(root: str, rows: int) -> str:
    """A sheet of `rows` rows of text and none cells, in sections of 100 rows."""
    folder = os.path.join(root, "scale")
    os.makedirs(folder, exist_ok=True)
    sections = []
    for start in range(0, rows, 100):
        name = f"s{start // 100:04d}.yaml"
        sections.append(name)
        lines = [f"id: s{start // 100}", f"title: Section {start // 100}", "rows:"]
        for i in range(start, min(start + 100, rows)):
            lines += [
                f"  - id: row-{i}",
                f"    title: Row {i} <with markup & symbols>",
                f"    notes: Note for *row {i}*, with `code` and a [link](https://example.org/{i}).",
                "    cells:",
                f'      a: {{text: "fact {i}", source: "https://example.org/{i}"}}',
                "      b: {none: \"missing here; use something else\"}",
                f'      c: {{text: "another fact {i}"}}',
            ]
        with open(os.path.join(folder, name), "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")
    with open(os.path.join(folder, "sheet.yaml"), "w", encoding="utf-8") as handle:
        handle.write(
            "id: scale\ntitle: Scale\ncolumns:\n"
            "  - {id: a, name: A, lanes: [python]}\n  - {id: b, name: B, lanes: [python]}\n  - {id: c, name: C, lanes: [python]}\n"
            f"sections: [{', '.join(sections)}]\n"
        )
    return root


def scale(rows: int) -> tuple[float, float]:
    """Seconds to load + check, and to render, a generated sheet of `rows` rows."""
    root = tempfile.mkdtemp(prefix="mlsheets-bench-scale-")
    try:
        generated_sheet(root, rows)
        started = time.perf_counter()
        sheets = content.load(root)
        loaded = time.perf_counter() - started
        verification = Verification(None, judge(plan(sheets), {}))
        started = time.perf_counter()
        render.render_site(sheets, verification)  # a fresh FragmentCache: highlighting and Markdown included
        return loaded, time.perf_counter() - started
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m generator.bench.engine", description=__doc__.splitlines()[0])
    parser.add_argument("--content", default=os.path.join(ROOT, "content"))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--skip-cold", action="store_true", help="only the scale figures")
    parser.add_argument("--skip-side-by-side", action="store_true", help="not the engines at the same time, one core each (about 10 minutes)")
    args = parser.parse_args(argv)
    print(f"machine: {os.cpu_count()} cores; scheduling for {args.jobs}")
    if not args.skip_cold:
        figures, cache_dir = cold_verification(args.content, args.jobs)
        try:
            peer_jobs, peer = shared_kernel_peer(args.content, cache_dir, args.jobs)
            print(f"\ncold verification of all content ({figures['cells']} cell runs, {figures['failures']} failing cells), "
                  f"ours (a process forked per cell) and the shared-kernel peer (one interpreter per lane, cells exec'd in it "
                  f"one after another, no isolation), {args.jobs} at a time; {peer.left_out} multi-process cells left out of the peer")
            print(f"{'lane worker':40} {'cells':>6} {'import s':>9} {'in cells s':>11} {'around s':>9} {'ms/cell':>8} | {'peer import':>11} {'peer cells s':>12}")
            for lane in figures["lanes"]:
                key = lane["key"]
                print(f"{lane['lanes']:40} {lane['cells']:6d} {lane['import_s']:9.2f} {lane['cell_s']:11.2f} {lane['process_s']:9.2f} "
                      f"{1000 * lane['process_s'] / max(1, lane['cells']):8.1f} | {peer.import_s.get(key, 0.0):11.2f} {peer.cell_s.get(key, 0.0):12.2f}")
            print("  (around: fork, process exit, output capture, result; in cells: setup, code and check, where a fresh process")
            print("   also starts the framework's runtime and compiles what the peer's kernel has compiled for an earlier cell)")
            print(f"floor  {figures['floor']:.2f} s   = max(longest lane, sum of lanes / {args.jobs})")
            print(f"wall   {figures['wall']:.2f} s")
            print(f"ratio  {figures['ratio']:.3f}  (goal <= 1.25)")
            print(f"peer verdicts: {describe(tally(peer_jobs, peer.outcomes, judged=False))} "
                  f"(ours: {figures['failures']} failing); a cell that fails only in the peer fails from state earlier cells left")
            print(f"peer wall   {peer.wall:.2f} s")
            print(f"cold wall, ours / shared-kernel peer: {figures['wall']:.2f} / {peer.wall:.2f} = {figures['wall'] / peer.wall:.3f}  (goal <= 1.0)")
            if not args.skip_side_by_side:
                print_side_by_side(args.content)
            costs = cell_costs(sorted({lane for lane in LANES if lane in FIRST_OP}))
            print("\nwhat a cell costs besides its work, one at a time (median ms): an empty cell, and one first operation")
            print(f"{'lane':18} {'ours empty':>11} {'peer empty':>11} {'ours first op':>14} {'peer first op':>14}")
            for row in costs:
                print(f"{row['lane']:18} {row['ours_empty_ms']:11.1f} {row['peer_empty_ms']:11.2f} {row['ours_first_ms']:14.1f} {row['peer_first_ms']:14.2f}")
            times, frameworks = unchanged_build(args.content, cache_dir)
            print(f"\nbuild with nothing changed: median {statistics.median(times):.3f} s over {len(times)} runs "
                  f"({', '.join(f'{t:.3f}' for t in times)}); frameworks imported: {frameworks or 'none'}")
            changed = one_row_changed(args.content, cache_dir, args.jobs)
            print(f"one row changed ({changed['row']}, column {changed['column']}): ran {changed['ran']} cell run(s) "
                  f"for its {changed['lanes']} lane(s), started {changed['workers']} worker(s), {changed['wall']:.2f} s")
        finally:
            shutil.rmtree(cache_dir, ignore_errors=True)
    print("\nscale: generated sheet of text and none cells (load+check, render)")
    base = None
    for rows in (1000, 2500, 5000, 10000):
        loaded, rendered = scale(rows)
        per_row = (loaded + rendered) / rows * 1e6
        base = base or per_row
        print(f"{rows:6d} rows: load+check {loaded:6.2f} s  render {rendered:6.2f} s  {per_row:6.0f} µs/row ({per_row / base:.2f}x the 1,000-row cost per row)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
