"""What the templates show: the view of a cell (its verdict, runs, counterexamples), a sheet's
counts, provenance, the report's rows, and the fragments that load on opening."""

from __future__ import annotations

import re

from generator.model import CODE, NONE, PASSED, STATUSES, TEXT, Sheet, Status
from generator.render import releases
from generator.render.markup import safe_url
from generator.verify import ledger
from generator.verify.verification import Verification

DEPRECATION_CATEGORIES = {"DeprecationWarning", "FutureWarning", "PendingDeprecationWarning"}


BADGE_PACKAGES = ("torch", "jax", "flax", "optax", "tensorflow-cpu", "keras", "pytensor", "numpy")


def main_versions(versions: dict) -> list[str]:
    return [f"{name.replace('-cpu', '')} {versions[name]}" for name in BADGE_PACKAGES if name in versions]


def base_lane(lane: str) -> str:
    """'keras@jax:cuda' -> 'keras@jax': a GPU run's lane as the cell names it."""
    return lane.split(":", 1)[0]


def lane_text(lanes: list[str]) -> str:
    """Lanes as a badge names them: 'torch', 'keras@jax/torch/tensorflow' (one framework on several
    backends), or 'torch, jax'."""
    split = [lane.split("@") for lane in lanes]
    if len(lanes) > 1 and all(len(parts) == 2 for parts in split) and len({parts[0] for parts in split}) == 1:
        return f"{split[0][0]}@" + "/".join(parts[1] for parts in split)
    return ", ".join(lanes)


def gpu_lane_text(lanes: list[str], on_gpu: list[str]) -> str:
    """What the badge says of the GPU: ' · GPU' when every lane of the cell ran there with evidence of
    GPU work, ' · GPU: jax/torch' (the Keras backends) when only some did (TensorFlow never goes
    there), '' when none."""
    ran = [lane for lane in lanes if lane in on_gpu]
    if not ran:
        return ""
    if len(ran) == len(lanes):
        return " · GPU"
    prefixes = {lane.partition("@")[0] for lane in lanes}
    named = [lane.partition("@")[2] or lane for lane in ran] if len(prefixes) == 1 and all("@" in lane for lane in ran) else ran
    return f" · GPU: {'/'.join(named)}"


def own_warning(cell, warning: dict) -> bool:
    """Whether the cell's own code raised the warning: its `where` names the cell's file (the worker
    writes it as `file:line`). A warning raised inside a framework's code (a Keras backend calling
    NumPy the old way) is that framework's, not the cell's."""
    where = str(warning.get("where", "")).rpartition(":")[0] or str(warning.get("where", ""))
    own = cell.source.path
    return bool(where) and (where == own or own.endswith("/" + where) or where.endswith("/" + own))


def standing(cell, verdict, gpu_runs) -> str:
    """A code cell's standing as its badge and every count show it:

    - 'passed': verified: every CPU lane passed, or (a GPU-only cell, which has no CPU verdict) a
      current GPU run passed with evidence of GPU work;
    - 'gpu-no-work': a GPU-only cell whose current GPU run passed but did no GPU work (it reads the
      device's properties): verified on the GPU machine by its check, not shown as GPU work;
    - 'awaiting-gpu': a GPU-only cell with no current passed GPU run;
    - otherwise the CPU verdict's status ('failed', 'timeout', 'skipped'...)."""
    if cell.gpu_only:
        current = [run for run in gpu_runs if not run.stale and run.result.status == PASSED]
        if any(run.counts for run in current):
            return "passed"
        return "gpu-no-work" if current else "awaiting-gpu"
    return str(verdict.status) if verdict else str(Status.SKIPPED)


VERIFIED = ("passed", "gpu-no-work")  # standings that count as verified


def cell_standing(key: tuple[str, str, str], cell, verification: Verification) -> str:
    """`standing` of the cell at (sheet, row, column), from the verification's CPU verdict and GPU runs."""
    return standing(cell, verification.verdicts.get(key), verification.gpu.get(key, ()))


def rejection_detail(cell, detail: str) -> str:
    """A counterexample's rejection as the page says it. A check that compares values with
    `np.testing` raises an AssertionError whose message starts on a new line, so its verdict reads
    'rejected by the check: AssertionError:' with nothing after: name the comparison instead."""
    if not re.fullmatch(r"rejected by the check: \w*Error:?\s*", detail):
        return detail
    check = cell.check.text if cell.check else ""
    compared = list(dict.fromkeys(re.findall(r"\b((?:np|numpy|torch|tf|jnp|keras\.ops)\.(?:testing|debugging)\.\w+|assert_\w+)\(", check)))
    if compared:
        return f"rejected by the check: {', '.join(compared)} found the values differ"
    return "rejected by the check: one of its assertions failed"


def cell_view(sheet: Sheet, row, cell, verification: Verification) -> dict:
    """What a template needs to show one cell."""
    view = {"column": cell.column, "kind": cell.kind, "source": str(cell.source)}
    if cell.kind == TEXT:
        view.update(text=cell.text, url=safe_url(cell.url))
    elif cell.kind == NONE:
        view.update(reason=cell.reason)
    else:
        key = (sheet.id, row.id, cell.column)
        verdict = verification.verdicts.get(key)
        lanes = []
        for lane, result in verdict.results if verdict else ():
            lanes.append(
                {
                    "lane": lane,
                    "status": result.status,
                    "duration": result.duration,
                    "versions": main_versions(result.versions),
                    "python": result.versions.get("python", ""),
                    "device": result.device,
                    "date": result.date,
                    "error": result.error,
                    "stdout": result.stdout,
                    "stderr": result.stderr,
                    "output_cut": result.output_cut,
                }
            )
        warnings = verdict.warnings if verdict else []
        gpu_runs = verification.gpu.get(key, ())
        gpu = [
            {
                "machine": run.machine,
                "lane": run.lane,
                "status": Status.STALE if run.stale else run.result.status,
                "counts": run.counts,
                "no_work": run.runs_anywhere,
                "detail": run.result.detail,
                "device": run.result.device,
                "date": run.result.date,
                "duration": run.result.duration,
                "versions": main_versions(run.result.versions),
            }
            for run in gpu_runs
        ]
        shown = standing(cell, verdict, gpu_runs)
        wrong = []
        for index, counterexample in enumerate(cell.counterexamples, 1):
            runs = verdict.counterexample_runs(index) if verdict else []
            rejected = verdict.rejected(index) if verdict else False
            details = [result.detail for _, result in runs if result.detail]
            wrong.append(
                {
                    "code": counterexample.code.text,
                    "why": counterexample.why,
                    "raises": counterexample.raises,
                    "rejected": rejected,
                    "lanes": [lane for lane, _ in runs],
                    "detail": rejection_detail(cell, details[0]) if details else ("rejected" if rejected else "not run"),
                }
            )
        mutation = verification.mutation.get(key)
        badge_lanes = [lane for lane, _ in verdict.results] if verdict else list(cell.lanes)
        on_gpu = sorted({base_lane(run.lane) for run in gpu_runs if run.counts})
        deprecations = [w for w in warnings if w.get("category") in DEPRECATION_CATEGORIES]
        view.update(
            mutation=mutation_view(mutation),
            counterexamples=wrong,
            problem=verdict.problem if verdict else "",
            cpu_only=cell.cpu_only,
            gpu_only=cell.gpu_only,
            gpu=gpu,
            gpu_lanes=on_gpu,
            releases=releases.cell_versions(verification, key, cell),
            code=cell.code.text if cell.code else "",
            status=verdict.status if verdict else Status.SKIPPED,
            standing=shown,
            lane_text=lane_text(badge_lanes) + gpu_lane_text(badge_lanes, on_gpu),
            lanes=lanes,
            passed_lanes=list(verdict.passed_lanes) if verdict else [],
            duration=verdict.duration if verdict else 0.0,
            # the cell's own deprecations; those raised inside a framework's code are listed with its runs
            deprecations=[w for w in deprecations if own_warning(cell, w)],
            library_warnings=[w for w in deprecations if not own_warning(cell, w)],
            warnings=[w for w in warnings if w.get("category") not in DEPRECATION_CATEGORIES],
            output=any(lane["stdout"] or lane["stderr"] for lane in lanes),
            # A verified cell's runs load on opening its badge (html.py, lazy_bodies); others stay in the page.
            lazy_runs=shown in VERIFIED,
        )
    return view


def mutation_view(state) -> dict | None:
    """A cell's mutation standing as the badge shows it (None: the cell is not mutated, e.g. GPU-only)."""
    if state is None:
        return None
    return {
        "state": state.state,
        "killed": state.killed,
        "scored": state.scored,
        "equivalent": state.equivalent,
        "survived": [{"description": m.description, "lanes": sorted(lane for lane, v in m.lanes.items() if v == "survived")} for m in state.survived],
        "declared": [{"description": m.description, "why": why} for m, why in state.declared],
    }


def mutation_summary(sheets: list[Sheet], verification: Verification) -> dict:
    """The report's mutation tables: per sheet, per family and per operator, and every survivor."""
    per_sheet, families, operators, survivors, declared = [], {}, {}, [], []
    for sheet in sheets:
        row = {"sheet": sheet.id, "title": sheet.title, "current": 0, "stale": 0, "missing": 0, "killed": 0, "survived": 0, "equivalent": 0, "declared": 0}
        for section_row in sheet.rows():
            for cell in section_row.cells:
                state = verification.mutation.get((sheet.id, section_row.id, cell.column))
                if state is None:
                    continue
                row[state.state] += 1
                if state.state != "current":
                    continue
                row["killed"] += state.killed
                row["survived"] += len(state.survived)
                row["equivalent"] += state.equivalent
                row["declared"] += len(state.declared)
                for family, (killed, survived) in state.by_family.items():
                    k, s = families.get(family, (0, 0))
                    families[family] = (k + killed, s + survived)
                for operator, (generated, killed) in state.by_operator.items():
                    g, k = operators.get(operator, (0, 0))
                    operators[operator] = (g + generated, k + killed)
                where = {"sheet": sheet.id, "row": section_row.id, "column": cell.column}
                survivors += [{**where, "description": m.description, "family": m.family, "lanes": ", ".join(sorted(lane for lane, v in m.lanes.items() if v == "survived"))} for m in state.survived]
                declared += [{**where, "description": m.description, "why": why} for m, why in state.declared]
        scored = row["killed"] + row["survived"]
        row["score"] = f"{100 * row['killed'] / scored:.1f}%" if scored else "–"
        per_sheet.append(row)
    killed = sum(r["killed"] for r in per_sheet)
    scored = killed + sum(r["survived"] for r in per_sheet)
    return {
        "sheets": per_sheet,
        "families": [{"family": f, "killed": k, "survived": s, "score": f"{100 * k / (k + s):.1f}%" if k + s else "–"} for f, (k, s) in sorted(families.items())],
        "operators": [{"operator": o, "generated": g, "killed": k} for o, (g, k) in sorted(operators.items(), key=lambda item: -item[1][0])],
        "survivors": survivors,
        "declared": declared,
        "killed": killed,
        "scored": scored,
        "score": f"{100 * killed / scored:.1f}%" if scored else "–",
        "mutated": sum(r["current"] for r in per_sheet),
        "cells": sum(r["current"] + r["stale"] + r["missing"] for r in per_sheet),
    }


_TENSORFLOW_LANES = (("tensorflow", "TensorFlow"), ("tf1", "TF1"), ("keras@tensorflow", "Keras on TensorFlow"))


NOT_FAILED = (*VERIFIED, "awaiting-gpu", str(Status.SKIPPED), str(Status.NOT_APPLICABLE))  # not verified, not a failure either


def sheet_stats(sheet: Sheet, verification: Verification) -> dict:
    """A sheet's counts: code cells, verified ones (GPU-only cells by their GPU runs), failed ones,
    GPU-only cells verified on the GPU machine without GPU work (they read the device) and awaiting one."""
    code = passed = failed = no_work = awaiting = rows = 0
    for row in sheet.rows():
        rows += 1
        for cell in row.cells:
            if cell.kind == CODE:
                code += 1
                shown = cell_standing((sheet.id, row.id, cell.column), cell, verification)
                passed += shown in VERIFIED
                failed += shown not in NOT_FAILED
                no_work += shown == "gpu-no-work"
                awaiting += shown == "awaiting-gpu"
    gpu_jobs = [job for job in verification.gpu_jobs if job.sheet == sheet.id]
    gpu_passed, gpu_possible = ledger.coverage(gpu_jobs, verification.gpu)
    # the lanes no GPU run covers (Keras is verified on the GPU on its JAX and PyTorch backends)
    sheet_lanes = {lane for c in sheet.columns for lane in c.lanes}
    cpu_only = [label for lane, label in _TENSORFLOW_LANES if lane in sheet_lanes]
    return {
        "rows": rows,
        "code": code,
        "passed": passed,
        "failed": failed,
        "gpu_no_work": no_work,
        "awaiting_gpu": awaiting,
        "share": passed / code if code else 1.0,
        "gpu_passed": gpu_passed,
        "gpu_possible": gpu_possible,
        "cpu_only": cpu_only,
    }


def provenance(sheets: list[Sheet], verification: Verification) -> dict:
    """Which machines, dates and versions verified the given sheets."""
    devices, dates, versions = set(), set(), {}
    sheet_ids = {sheet.id for sheet in sheets}
    for (sheet_id, _, _), verdict in verification.verdicts.items():
        if sheet_id not in sheet_ids:
            continue
        for _, result in verdict.results:
            if result.status != PASSED:
                continue
            devices.add(result.device)
            dates.add(result.date)
            for name, version in result.versions.items():
                versions.setdefault(name, set()).add(version)
    ordered = [(n, ", ".join(sorted(versions[n]))) for n in ("python", *BADGE_PACKAGES) if n in versions]
    return {
        "devices": sorted(devices),
        "dates": sorted(dates),
        "versions": [f"{name.replace('-cpu', '')} {value}" for name, value in ordered],
    }


def report_rows(records: list[dict]) -> list[dict]:
    """The report's rows: failures first, then in content order."""
    rows = []
    for index, record in enumerate(records):
        rank = STATUS_ORDER.get(record["status"], 0)
        version_text = " · ".join(main_versions(record["versions"]))
        rows.append({**record, "rank": rank, "order": index, "version_text": version_text})
    return sorted(rows, key=lambda r: (r["rank"] == STATUS_ORDER[PASSED], r["rank"], r["order"]))


def lazy_bodies(env, rows: dict, macro: str, key: str) -> dict:
    """The HTML of macro `macro` for each cell view that has `key`, by row and column: what a page
    loads on demand instead of carrying it (its "Not this" lists, a passed cell's runs)."""
    render = getattr(env.get_template("macros.html").module, macro)
    bodies: dict[str, dict[str, str]] = {}
    for row_id, views in rows.items():
        for view in views:
            if view.get(key):
                bodies.setdefault(row_id, {})[view["column"]] = str(render(view))
    return bodies


def see_also_links(sheets: list[Sheet]) -> dict[str, dict[str, list[dict]]]:
    """Per sheet and row, the rows elsewhere that answer the same task: those its `see_also` names and
    those whose `see_also` names it, each once, in content order: {href, title, sheet}."""
    by_key = {(sheet.id, row.id): (sheet, row) for sheet in sheets for row in sheet.rows()}
    pages = {sheet.id: sheet.page_of() for sheet in sheets}
    pairs: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for sheet in sheets:
        for row in sheet.rows():
            for ref in row.see_also:
                target = (ref.sheet, ref.row)
                for a, b in (((sheet.id, row.id), target), (target, (sheet.id, row.id))):
                    if b not in pairs.setdefault(a, []):
                        pairs[a].append(b)
    order = {key: index for index, key in enumerate(by_key)}
    links: dict[str, dict[str, list[dict]]] = {}
    for (sheet_id, row_id), targets in pairs.items():
        # a preview renders only some sheets: a link from or to a row of another sheet is left out there
        for target in sorted((t for t in targets if t in by_key), key=order.get) if (sheet_id, row_id) in by_key else ():
            target_sheet, target_row = by_key[target]
            links.setdefault(sheet_id, {}).setdefault(row_id, []).append(
                {"href": f"{pages[target_sheet.id][target_row.id]}#{target_row.id}", "title": target_row.title, "sheet": target_sheet.title}
            )
    return links


def gpu_coverage(sheets: list[Sheet], verification: Verification) -> dict:
    """GPU coverage with its parts: cells marked CPU-only (with reasons) and GPU-only, cells whose
    GPU run did no GPU work (runs anywhere), cells the GPU machine could not run."""
    counts = ledger.coverage_counts(verification.gpu_jobs, verification.gpu)
    cells = [cell for sheet in sheets for row in sheet.rows() for cell in row.cells if cell.kind == CODE]
    counts["cpu_only"] = sum(bool(cell.cpu_only) for cell in cells)
    counts["gpu_only"] = sum(bool(cell.gpu_only) for cell in cells)
    return counts


def truth_counts(sheets: list[Sheet], verification: Verification) -> dict:
    """How much of the content proves it can tell a wrong answer: rows with counterexamples, checks
    proven to reject one, rows whose columns were proven to compute the same value."""
    rows = rows_with = checks = checks_proven = same = 0
    for sheet in sheets:
        for row in sheet.rows():
            rows += 1
            code = [cell for cell in row.cells if cell.kind == CODE]
            rows_with += any(cell.counterexamples for cell in code)
            for cell in code:
                if cell.check is None:
                    continue
                checks += 1
                verdict = verification.verdicts.get((sheet.id, row.id, cell.column))
                runs = verdict.counterexamples if verdict else ()
                checks_proven += bool(runs) and all(result.status == PASSED for _, _, result in runs)
            outcome = verification.same.get((sheet.id, row.id))
            same += bool(outcome and outcome.proven)
    return {"rows": rows, "rows_with_counterexamples": rows_with, "checks": checks, "checks_proven": checks_proven, "same_rows": same}


STATUS_ORDER = {status: index for index, status in enumerate(STATUSES)}
