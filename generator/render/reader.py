"""What the build writes for readers beyond the pages: the search index, the runnable scripts, the
compare figures, the per-sheet "last verified" line and the offline zip.

The index and the runnable scripts are JSON wrapped in one call, `hpg.receive(name, data)`, in a
.js file: a page asks for them only when a reader needs them (focus on the search box, a compare
view, a "Copy runnable" button), and a script file loads over http(s) and from a file:// page
alike, where fetch() of a JSON file is refused. Nothing is loaded from another server.
"""

from __future__ import annotations

import ast
import io
import json
import re
import zipfile

from generator.lanes import LANES
from generator.load import codeinfo
from generator.model import CODE, PASSED, TEXT, Sheet
from generator.render import compare
from generator.render.markup import plain
from generator.verify.verification import Verification

INDEX_PATH = "search-index.js"
OFFLINE_ZIP = "ml-hyperpolyglot-offline.zip"
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


def script(name: str, data) -> bytes:
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return f'hpg.receive({json.dumps(name)},{text});\n'.encode()


# Words a note's index entry leaves out: they match everything and rank nothing.
STOPWORDS = frozenset(
    "a an and are as at be by can do does for from has have how if in is it its not of on or that the their them then there "
    "these this to was what when where which while will with without you your".split()
)

_MARKUP = re.compile(r"\]\([^)]*\)|\{\{[^}]*\}\}|https?://\S+")  # link targets, facts, bare URLs: not words of the note


def _words(cell) -> list[str]:
    """The dotted names the code shows, as written (nnx.Conv, x.shape), and the keywords it passes
    (`from_logits=`, `clipnorm=`), without repeats."""
    if cell.kind != CODE or not cell.code:
        return []
    words = [w for w in _WORD.findall(cell.code.text) if "." in w]
    try:
        tree = ast.parse(cell.code.text)
    except SyntaxError:
        tree = None
    if tree is not None:
        words += [f"{k.arg}=" for node in ast.walk(tree) if isinstance(node, ast.Call) for k in node.keywords if k.arg]
    return list(dict.fromkeys(words))


def note_words(row, common: frozenset = frozenset()) -> str:
    """The words of a row's notes, once each, in order, without link targets, common words and the
    words its title already has: what search matches a note on (last, after the title, the section
    and the code). `common`: words so many notes hold that they tell no row apart."""
    text = _MARKUP.sub(" ", row.notes or "")
    title = {w.lower() for w in _WORD.findall(row.title)}
    seen = dict.fromkeys(w for w in (m.lower() for m in _WORD.findall(text)) if len(w) > 1 and w not in STOPWORDS and w not in common and w not in title)
    return " ".join(seen)


def common_note_words(sheets: list[Sheet], share: float = 0.05) -> frozenset:
    """The words more than `share` of all rows' notes hold (and more than three)."""
    counts: dict[str, int] = {}
    rows = 0
    for sheet in sheets:
        for row in sheet.rows():
            rows += 1
            for word in set(note_words(row).split()):
                counts[word] = counts.get(word, 0) + 1
    return frozenset(word for word, count in counts.items() if count > max(3, share * rows))


def column_family(column) -> str:
    """What a column runs, as the compare view matches columns across sheets: its lanes (JAX / Flax
    on one sheet and JAX + Flax NNX on another are both `jax`)."""
    return "+".join(column.lanes)


def search_index(sheets: list[Sheet], verification: Verification | None = None) -> dict:
    """Every row of every sheet: its title, section and, per cell, kind, API names and the other
    dotted names and keywords shown; sheets and columns by position, to keep the file small. A
    sixth element holds what only some rows have: `p` the row's page (a sheet split into pages),
    `n` its notes' words, and what the compare view needs (compare.row_data: `s`, `d`, `i`)."""
    out_sheets, rows = [], []
    common = common_note_words(sheets)
    for s_index, sheet in enumerate(sheets):
        columns = [c.id for c in sheet.columns]
        out_sheets.append({"id": sheet.id, "title": sheet.title, "columns": [[c.id, c.name, column_family(c)] for c in sheet.columns]})
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
                    cells.append([columns.index(cell.column), cell.kind[0], api, words])
                extra = compare.row_data(sheet, row, verification) if verification is not None else {}
                if pages[row.id] != f"{sheet.id}.html":  # a sheet split into pages: the row's own page
                    extra["p"] = pages[row.id].removesuffix(".html")
                notes = note_words(row, common)
                if notes:
                    extra["n"] = notes
                rows.append([s_index, row.id, row.title, section.title, cells, extra])
    return {"format": 2, "sheets": out_sheets, "rows": rows}


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
        if run.counts or run.runs_anywhere:
            versions = ", ".join(f"{name} {v}" for name, v in sorted(run.result.versions.items()))
            how = "" if run.counts else " (no GPU work seen: it reads the device)"
            lines.append(f"#   {run.lane} on a GPU: {run.result.date} on {run.result.device} ({run.machine}){how}; {versions}")
    return lines


# Calls that change state (a step, a backward pass, a save, a deletion, an in-place op ending in _):
# a last line made of them is not evaluated again to print its value.
_CHANGES = re.compile(r"^(step|backward|apply|apply_gradients|update|update_state|reset_state|reset_states|fit|save|save_weights|load_weights|"
                      r"load_state_dict|delete|write|assign|assign_add|assign_sub|zero_grad|wait_until_finished|print|set_\w+|enable_\w+|\w+_)$")  # fmt: skip


def _computed(code: str) -> tuple[list[str], str]:
    """What a script should print after the code: the names the code binds at its top level (not
    inside functions, classes or comprehensions), in order, and its last line when that is an
    expression that changes nothing when evaluated again (`x.shape, x.dtype`, `f(x)`,
    `importlib.metadata.version("torch")`, not `opt.step()`)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return [], ""
    names: dict[str, None] = {}

    def visit(node) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and not node.id.startswith("_"):
            names.setdefault(node.id, None)
        for child in ast.iter_child_nodes(node):
            visit(child)

    for statement in tree.body:
        if not isinstance(statement, (ast.Import, ast.ImportFrom)):
            visit(statement)
    last = tree.body[-1] if tree.body else None
    tail = ""
    if isinstance(last, ast.Expr):
        calls = [n.func for n in ast.walk(last) if isinstance(n, ast.Call)]
        called = [f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else "" for f in calls]
        if not any(isinstance(n, (ast.Await, ast.Yield, ast.NamedExpr)) for n in ast.walk(last)) and not any(not name or _CHANGES.match(name) for name in called):
            tail = ast.get_source_segment(code, last.value) or ""
    return list(names), tail


# The lane ran each cell in a scratch directory of its own. So does the script: what it writes (a
# checkpoint, an exported model) lands there, and a second run does not find the first one's files.
# The processes torchrun starts share one (its run id names it).
SCRATCH = """import os
import tempfile

# Like the lane that verified it, run in a fresh scratch directory: files it writes land there.
_scratch = os.path.join(tempfile.gettempdir(), "hpg-" + os.environ["TORCHELASTIC_RUN_ID"]) if "TORCHELASTIC_RUN_ID" in os.environ else tempfile.mkdtemp(prefix="hpg-")
os.makedirs(_scratch, exist_ok=True)
os.chdir(_scratch)"""


# The lane's worker leaves with os._exit, so a cell never meets gloo's teardown; a script that exits
# normally does, and one torchrun process in about twelve aborted there ("terminate called without an
# active exception", exit -6) after its cell had passed. Each process leaves the group first.
LEAVE_GROUP = """# torchrun's processes leave the process group before they exit (gloo can abort in its teardown otherwise)
import torch.distributed as _dist
if _dist.is_initialized():
    _dist.barrier()
    _dist.destroy_process_group()"""


def runnable(sheet: Sheet, row, cell, verification: Verification) -> str:
    """The cell as a script: the lane's environment and prelude, the hidden setup, the code shown,
    then what the code computed, printed. Never the check. A GPU-only cell keeps the environment of
    its lane on a GPU (JAX on CUDA, not the CPU lanes' JAX_PLATFORMS=cpu). The comment names the
    versions and devices it passed on. It runs in a scratch directory of its own, so it runs twice."""
    column = next(c for c in sheet.columns if c.id == cell.column)
    key = (sheet.id, row.id, cell.column)
    verdict = verification.verdicts.get(key)
    passed = [lane for lane, result in (verdict.results if verdict else ()) if result.status == PASSED]
    if cell.gpu_only:
        on_gpu = [run.lane.split(":")[0] for run in verification.gpu.get(key, ()) if run.counts or run.runs_anywhere]
        lanes = [LANES[f"{name}:cuda"] for name in (list(dict.fromkeys(on_gpu)) or cell.lanes)]
    else:
        lanes = [LANES[name] for name in (passed or cell.lanes)]
    first = lanes[0]
    out = [
        f"# {sheet.title} · {plain(row.title)} · {column.name}",
        f"# ML Hyperpolyglot, {sheet.page_of()[row.id]}#{row.id}: the setup hidden on the page, then the code shown there, then what it computed.",
        "# Verified (code, setup and a check that asserts the result) with:",
        *(_runs(verification, key) or ["#   (no passing run recorded)"]),
    ]
    if cell.gpu_only:
        out.append(f"# It runs on an NVIDIA GPU only: {cell.gpu_only}.")
    if first.processes > 1:
        out.append(f"# Run it as: torchrun --standalone --nproc-per-node {first.processes} this_file.py (it was verified in {first.processes} processes, as torchrun starts them).")
    out += ["", SCRATCH]
    env = dict(first.env)
    if env:
        out += ["", "# The environment it was verified in; what you set yourself wins."]
        for name, value in env.items():
            comment = ""
            if name == "KERAS_BACKEND" and len(lanes) > 1:
                others = ", ".join(lane.env.get("KERAS_BACKEND", "") for lane in lanes)
                comment = f"  # passed on each of: {others}"
            out.append(f"os.environ.setdefault({name!r}, {value!r}){comment}")
    if first.prelude:
        out += ["", f"# The {first.name.split(':')[0]} lane runs this first:", first.prelude.rstrip("\n")]
    if cell.setup:
        out += ["", "# setup (hidden on the page)", cell.setup.text.rstrip("\n")]
    code = cell.code.text.rstrip("\n") if cell.code else ""
    out += ["", "# the code shown on the page", code]
    names, tail = _computed(code)
    if names or tail:
        out += ["", "# what it computed (the page shows the code only)"]
        if names:
            out += [f"for _name in {names!r}:", "    if _name in globals():", '        print(f"{_name} = {globals()[_name]!r}")']
        if tail:  # the last line's value (the page gives it in a comment, or not at all)
            out.append(f"print({tail.strip()!r}, '=', repr(({tail.strip()})))" if "\n" not in tail else f"print(repr(({tail.strip()})))")
    elif "print(" not in code:
        out += ["", 'print("(the code ran; it binds no name to show)")']
    if first.processes > 1:
        out += ["", LEAVE_GROUP]
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
