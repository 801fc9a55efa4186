"""The site's data for programs: one record per code cell and lane (verification.json, the sheets'
JSON and CSV), the GPU ledger's records (docs/data-format.md)."""

from __future__ import annotations

import csv
import io
import json

from generator.model import CODE, PASSED, TEXT, Sheet, Status
from generator.render import releases, views
from generator.verify.verification import Verification

# what the site's data says of each run (docs/data-format.md), from Result.to_json
RECORD_FIELDS = ("status", "duration", "versions", "device", "date", "warnings", "error")
GPU_RECORD_FIELDS = ("duration", "versions", "device", "date")


def gpu_runs(verification: Verification, key) -> list[dict]:
    """A cell's runs on GPU machines (the ledger): lane, machine, status (`stale` when the cell changed
    since), whether it did GPU work there, device, date, duration and versions."""
    return [
        {"lane": run.lane, "machine": run.machine, "status": Status.STALE if run.stale else run.result.status, "gpu_work": bool(run.counts),
         **run.result.to_json(GPU_RECORD_FIELDS)}
        for run in verification.gpu.get(key, ())
    ]  # fmt: skip


def verification_records(sheets: list[Sheet], verification: Verification) -> list[dict]:
    """One record per code cell and lane: the data behind the report page and the downloads."""
    records = []
    for sheet in sheets:
        for section in sheet.sections:
            for row in section.rows:
                for cell in row.cells:
                    if cell.kind != CODE:
                        continue
                    verdict = verification.verdicts.get((sheet.id, row.id, cell.column))
                    for lane, result in verdict.results if verdict else ():
                        records.append(
                            {
                                "sheet": sheet.id,
                                "section": section.id,
                                "row": row.id,
                                "column": cell.column,
                                "lane": lane,
                                **result.to_json(RECORD_FIELDS),
                                "source": str(cell.source),
                            }
                        )
    return records


def mutation_records(sheets: list[Sheet], verification: Verification) -> list[dict]:
    """One record per mutated code cell: its mutation standing and its surviving and declared mutants."""
    records = []
    for sheet in sheets:
        for row in sheet.rows():
            for cell in row.cells:
                state = verification.mutation.get((sheet.id, row.id, cell.column))
                if state is None:
                    continue
                record = {"sheet": sheet.id, "row": row.id, "column": cell.column, "state": state.state}
                if state.state == "current":
                    record.update(killed=state.killed, survived=[m.description for m in state.survived], equivalent=state.equivalent,
                                  declared=[{"mutant": m.description, "why": why} for m, why in state.declared])  # fmt: skip
                records.append(record)
    return records


CSV_COLUMNS = ("sheet", "section", "row", "title", "column", "kind", "code", "text", "verdict", "cpu_lanes", "gpu_lanes", "older_releases", "source")


def verdict_text(sheet_id: str, row, cell, verification: Verification) -> str:
    """A code cell's verdict in words, as its badge says it: verified (on a GPU, for a GPU-only cell),
    passed on a GPU machine without GPU work, awaiting a GPU run, or the failure's status."""
    shown = views.cell_standing((sheet_id, row.id, cell.column), cell, verification)
    if shown == "passed":
        return "verified on a GPU" if cell.gpu_only else "verified"
    return {"gpu-no-work": "passed on a GPU machine, no GPU work seen", "awaiting-gpu": "awaiting a GPU run"}.get(shown, shown)


def sheet_csv(sheet: Sheet, verification: Verification) -> str:
    """A sheet as a table for people who reuse it: one line per cell (every kind), in page order, with
    its code or fact and its verdict (docs/data-format.md)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for section in sheet.sections:
        for row in section.rows:
            for cell in row.cells:
                line = {"sheet": sheet.id, "section": section.id, "row": row.id, "title": row.title, "column": cell.column, "kind": cell.kind, "source": str(cell.source)}
                if cell.kind == CODE:
                    key = (sheet.id, row.id, cell.column)
                    verdict = verification.verdicts.get(key)
                    on_gpu = dict.fromkeys(views.base_lane(run.lane) for run in verification.gpu.get(key, ()) if run.counts)
                    older = releases.cell_versions(verification, key, cell)
                    line.update(
                        code=cell.code.text if cell.code else "",
                        verdict=verdict_text(sheet.id, row, cell, verification),
                        cpu_lanes=" ".join(verdict.passed_lanes) if verdict else "",
                        gpu_lanes=" ".join(on_gpu),
                        older_releases="; ".join(part for part in (f"passes on {older['range']}" if older.get("range") else "", f"fails on {older['failed_text']}" if older.get("failures") else "") if part),
                    )
                elif cell.kind == TEXT:
                    line["text"] = cell.text
                else:
                    line["text"] = cell.reason
                writer.writerow([line.get(column, "") for column in CSV_COLUMNS])
    return out.getvalue()


def ledger_records(verification: Verification) -> list[dict]:
    """One record per ledger entry that still belongs to a cell, stale ones marked."""
    records = []
    for (sheet, row, column), runs in sorted(verification.gpu.items()):
        for run in runs:
            records.append(
                {
                    "sheet": sheet,
                    "row": row,
                    "column": column,
                    "lane": run.lane,
                    "machine": run.machine,
                    **run.result.to_json(GPU_RECORD_FIELDS),
                    "status": Status.STALE if run.stale else run.result.status,
                }
            )
    return records


def status_counts(records: list[dict]) -> dict:
    passed = sum(r["status"] == PASSED for r in records)
    return {"total": len(records), "passed": passed, "failed": len(records) - passed}


def sheet_export(sheet: Sheet, records: list[dict], verification: Verification) -> dict:
    """A sheet's content and its verification, for others to build on (docs/data-format.md)."""
    by_cell: dict[tuple[str, str], list[dict]] = {}
    for record in records:
        by_cell.setdefault((record["row"], record["column"]), []).append(
            {k: record[k] for k in ("lane", "status", "duration", "versions", "device", "date", "warnings")}
        )
    sections = []
    for section in sheet.sections:
        rows = []
        for row in section.rows:
            cells = {}
            for cell in row.cells:
                entry = {"kind": cell.kind, "source": str(cell.source)}
                if cell.kind == CODE:
                    entry["code"] = cell.code.text if cell.code else ""
                    entry["verdict"] = verdict_text(sheet.id, row, cell, verification)
                    entry["verification"] = by_cell.get((row.id, cell.column), [])
                    entry["gpu"] = gpu_runs(verification, (sheet.id, row.id, cell.column))
                    entry.update(releases.cell_export(verification, (sheet.id, row.id, cell.column), cell))
                    if cell.counterexamples:
                        verdict = verification.verdicts.get((sheet.id, row.id, cell.column))
                        entry["counterexamples"] = [
                            {"code": c.code.text, "why": c.why, "raises": c.raises, "rejected": bool(verdict and verdict.rejected(index))}
                            for index, c in enumerate(cell.counterexamples, 1)
                        ]
                    for field_name in ("cpu_only", "gpu_only"):
                        if getattr(cell, field_name):
                            entry[field_name] = getattr(cell, field_name)
                elif cell.kind == TEXT:
                    entry.update(text=cell.text, url=cell.url)
                else:
                    entry["reason"] = cell.reason
                cells[cell.column] = entry
            record = {"id": row.id, "title": row.title, "notes": row.notes, "cells": cells}
            if row.differs:
                record["differs"] = [{"what": d.what, "columns": list(d.columns), "checked": d.checked} for d in row.differs]
            if row.see_also:
                record["see_also"] = [f"{ref.sheet}/{ref.row}" for ref in row.see_also]
            if row.same is not None:
                outcome = verification.same.get((sheet.id, row.id))
                record["same"] = {"value": row.same.value, "rtol": row.same.rtol, "atol": row.same.atol, "proven": bool(outcome and outcome.proven)}
            rows.append(record)
        sections.append({"id": section.id, "title": section.title, "rows": rows})
    return {
        "format": 1,
        "id": sheet.id,
        "title": sheet.title,
        "columns": [{"id": c.id, "name": c.name, "lanes": list(c.lanes)} for c in sheet.columns],
        "sections": sections,
    }


def compact_json(data) -> bytes:
    # compact: the C encoder serves only indent=None, and these files are for programs
    return (json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
