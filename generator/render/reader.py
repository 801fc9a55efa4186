"""What the build writes for readers beyond the pages: the search index, the runnable scripts, the
compare figures, the per-sheet "last verified" line and the offline zip.

The index and the runnable scripts are JSON wrapped in one call, `hpg.receive(name, data)`, in a
.js file: a page asks for them only when a reader needs them (focus on the search box, a compare
view, a "Copy runnable" button), and a script file loads over http(s) and from a file:// page
alike, where fetch() of a JSON file is refused. Nothing is loaded from another server.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from itertools import combinations

from generator.lanes import LANES
from generator.load import codeinfo
from generator.model import CODE, NONE, PASSED, TEXT, Sheet
from generator.verify.verification import Verification

INDEX_PATH = "search-index.js"
OFFLINE_ZIP = "ml-hyperpolyglot-offline.zip"
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_SPACE = re.compile(r"\s+")


def script(name: str, data) -> bytes:
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return f'hpg.receive({json.dumps(name)},{text});\n'.encode()


def signature(cell) -> str:
    """What "the same" means to the compare view, for cells of one kind.

    Code: the set of the last parts of the API names it calls (`torch.ones` and `jnp.ones` agree);
    code that calls no API compares by its text. Text: the fact, whitespace and case aside.
    """
    if cell.kind == CODE:
        leaves = sorted({codeinfo.leaf(name) for name in codeinfo.api_names(cell)})
        return " ".join(leaves) if leaves else "=" + _SPACE.sub(" ", cell.code.text.strip() if cell.code else "")
    if cell.kind == TEXT:
        return _SPACE.sub(" ", cell.text.strip().lower())
    return ""


def _words(cell) -> list[str]:
    """The dotted names the code shows, as written (nnx.Conv, x.shape), without repeats."""
    if cell.kind != CODE or not cell.code:
        return []
    return list(dict.fromkeys(w for w in _WORD.findall(cell.code.text) if "." in w))


def search_index(sheets: list[Sheet]) -> dict:
    """Every row of every sheet: its title and, per cell, kind, API names and the other dotted
    names shown; sheets and columns by position, to keep the file small. The compare signature
    is derived from the API names (static/reader.js does what `signature` does), except for code
    that calls no API, which carries its own."""
    out_sheets, rows = [], []
    for s_index, sheet in enumerate(sheets):
        columns = [c.id for c in sheet.columns]
        out_sheets.append({"id": sheet.id, "title": sheet.title, "columns": [[c.id, c.name] for c in sheet.columns]})
        pages = sheet.page_of()
        for section in sheet.sections:
            for row in section.rows:
                cells = []
                for cell in row.cells:
                    api = codeinfo.api_names(cell)
                    shown = {w.rsplit(".", 1)[-1] for w in api}
                    words = [w for w in _words(cell) if w.rsplit(".", 1)[-1] not in shown]
                    if cell.kind == TEXT:
                        words = [cell.text]
                    entry = [columns.index(cell.column), cell.kind[0], api, words]
                    sig = signature(cell)
                    if sig.startswith("="):  # code that calls no API: the page's JS cannot derive it
                        entry.append(sig)
                    cells.append(entry)
                entry = [s_index, row.id, row.title, section.title, cells]
                if pages[row.id] != f"{sheet.id}.html":  # a sheet split into pages: the row's own page
                    entry.append(pages[row.id].removesuffix(".html"))
                rows.append(entry)
    return {"format": 1, "sheets": out_sheets, "rows": rows}


def same(a, b) -> bool:
    return a.kind == b.kind and a.kind != NONE and signature(a) == signature(b)


def compare_pairs(sheets: list[Sheet]) -> list[dict]:
    """For every two columns that share a sheet: per sheet (per page of a sheet split into pages), rows
    in all, rows that differ, and rows one or both lack. The compare page lists these; the sheet page's view agrees with them
    (the browser tests check one)."""
    pairs: dict[tuple[str, str], dict] = {}
    names: dict[str, str] = {}
    for sheet in sheets:
        for column in sheet.columns:
            names.setdefault(column.id, column.name)
        for a, b in combinations(sheet.columns, 2):
            key = (a.id, b.id)
            entry = pairs.setdefault(key, {"a": a.id, "b": b.id, "sheets": []})
            parts = sheet.parts()
            for part, path, sections in parts:  # a sheet split into pages: each page, which shows its own rows
                total = differ = lacking = 0
                for row in (row for section in sections for row in section.rows):
                    cells = {c.column: c for c in row.cells}
                    ca, cb = cells[a.id], cells[b.id]
                    total += 1
                    if ca.kind == NONE or cb.kind == NONE:
                        lacking += 1
                    elif not same(ca, cb):
                        differ += 1
                title = f"{sheet.title}: {part.title}" if len(parts) > 1 else sheet.title
                entry["sheets"].append({"id": path.removesuffix(".html"), "title": title, "rows": total, "differ": differ, "lacking": lacking})
    out = sorted(pairs.values(), key=lambda p: (-len(p["sheets"]), names[p["a"]], names[p["b"]]))
    for pair in out:
        pair["a_name"], pair["b_name"] = names[pair["a"]], names[pair["b"]]
    return out


def _runs(verification: Verification, key) -> list[str]:
    verdict = verification.verdicts.get(key)
    lines = []
    for lane, result in verdict.results if verdict else ():
        if result.status != PASSED:
            continue
        names = sorted(result.versions, key=lambda n: (n != "python", n))  # python first
        versions = ", ".join(f"{name} {result.versions[name]}" for name in names)
        lines.append(f"#   {lane}: {result.date} on {result.device}; {versions}")
    for run in verification.gpu.get(key, ()):
        if run.counts:
            versions = ", ".join(f"{name} {v}" for name, v in sorted(run.result.versions.items()))
            lines.append(f"#   {run.lane} on a GPU: {run.result.date} on {run.result.device} ({run.machine}); {versions}")
    return lines


def runnable(sheet: Sheet, row, cell, verification: Verification) -> str:
    """The cell as a script: the lane's environment and prelude, the hidden setup, the code shown.

    Never the check. The comment names the versions and devices it passed on."""
    column = next(c for c in sheet.columns if c.id == cell.column)
    verdict = verification.verdicts.get((sheet.id, row.id, cell.column))
    passed = [lane for lane, result in (verdict.results if verdict else ()) if result.status == PASSED]
    lanes = [LANES[name] for name in (passed or cell.lanes)]
    first = lanes[0]
    out = [
        f"# {sheet.title} · {row.title} · {column.name}",
        f"# ML Hyperpolyglot, {sheet.id}.html#{row.id}: the setup hidden on the page, then the code shown there.",
        "# Verified (code, setup and a check that asserts the result) with:",
        *(_runs(verification, (sheet.id, row.id, cell.column)) or ["#   (no passing run recorded)"]),
    ]
    if first.processes > 1:
        out.append(f"# Run it as: torchrun --standalone --nproc-per-node {first.processes} this_file.py (it was verified in {first.processes} processes, as torchrun starts them).")
    env = dict(first.env)
    if env:
        out += ["", "import os", "", "# The environment it was verified in; what you set yourself wins."]
        for name, value in env.items():
            comment = ""
            if name == "KERAS_BACKEND" and len(lanes) > 1:
                others = ", ".join(lane.env.get("KERAS_BACKEND", "") for lane in lanes)
                comment = f"  # passed on each of: {others}"
            out.append(f"os.environ.setdefault({name!r}, {value!r}){comment}")
    if first.prelude:
        out += ["", f"# The {first.name} lane runs this first:", first.prelude.rstrip("\n")]
    if cell.setup:
        out += ["", "# setup (hidden on the page)", cell.setup.text.rstrip("\n")]
    out += ["", "# the code shown on the page", cell.code.text.rstrip("\n") if cell.code else ""]
    return "\n".join(out) + "\n"


def runnable_scripts(sheet: Sheet, verification: Verification) -> dict:
    scripts: dict[str, dict[str, str]] = {}
    for row in sheet.rows():
        for cell in row.cells:
            if cell.kind == CODE:
                scripts.setdefault(row.id, {})[cell.column] = runnable(sheet, row, cell, verification)
    return scripts


def last_verified(sheet: Sheet, verification: Verification) -> dict:
    """When the sheet's cells last passed, and on which CPUs and GPUs."""
    dates, cpus, gpus = set(), set(), set()
    for (sheet_id, _, _), verdict in verification.verdicts.items():
        if sheet_id != sheet.id:
            continue
        for _, result in verdict.results:
            if result.status == PASSED:
                dates.add(result.date)
                cpus.add(result.device)
    gpu_dates = set()
    for (sheet_id, _, _), runs in verification.gpu.items():
        if sheet_id != sheet.id:
            continue
        for run in runs:
            if run.counts:
                gpus.add(run.result.device)
                gpu_dates.add(run.result.date)
    return {
        "date": max(dates) if dates else "",
        "cpus": sorted(cpus),
        "gpus": sorted(gpus),
        "gpu_date": max(gpu_dates) if gpu_dates else "",
    }


def offline_zip(files: dict[str, bytes], replacements: dict[str, bytes]) -> bytes:
    """The whole site in one zip, under one folder, as it is on disk: every link is relative."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for path in sorted(files):
            if path == OFFLINE_ZIP:
                continue
            info = zipfile.ZipInfo(f"ml-hyperpolyglot/{path}", date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, replacements.get(path, files[path]))
    return buffer.getvalue()
