"""Rendering: sheets and their verdicts into HTML pages and the verification data.

Jinja2 with autoescaping for pages, Pygments (class-based CSS) for code, Python-Markdown for notes
with its HTML sanitised by nh3, so no content can put script into a page. `render_site` returns
the site as a mapping of relative path to bytes; writing it out is sitefiles' job.
"""

from __future__ import annotations

import csv
import hashlib
import html as html_lib
import io
import json
import os
import re
from functools import cache

import jinja2
import markdown as markdown_lib
import nh3
from markupsafe import Markup, escape
from pygments.lexers import PythonLexer
from pygments.token import STANDARD_TYPES

from generator.files import write_json
from generator.load import facts
from generator.load.content import CHECKED_LABEL, CHECKED_NOTE, checked_labels
from generator.model import CODE, NONE, PASSED, STATUSES, TEXT, Sheet, Status
from generator.render import reader, releases
from generator.verify import ledger
from generator.verify.verification import Verification

TEMPLATES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "templates")
DOCS = os.path.join(os.path.dirname(TEMPLATES), "docs")
SITE_DOCS = {"data-format.md": "data-format.html"}  # docs/ files published as pages of the site
DEPRECATION_CATEGORIES = {"DeprecationWarning", "FutureWarning", "PendingDeprecationWarning"}
BADGE_PACKAGES = ("torch", "jax", "flax", "optax", "tensorflow-cpu", "keras", "pytensor", "numpy")
ALLOWED_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "dl", "dt", "em", "h3", "h4", "h5",
    "hr", "i", "li", "ol", "p", "pre", "span", "strong", "sub", "sup", "table", "tbody", "td", "th",
    "thead", "tr", "ul",
}  # fmt: skip
_LEXER = PythonLexer()


class FragmentCache:
    """Highlighted code and rendered Markdown from earlier builds, in one JSON file.

    Pygments and Python-Markdown were most of a no-change build's time; their output depends
    only on the text, on the libraries' versions and on this module's rendering code, which
    together make the file's stamp.
    """

    def __init__(self):
        self.entries: dict[str, str] = {}
        self.dirty = False

    @staticmethod
    def stamp() -> str:
        import pygments

        with open(__file__, "rb") as handle:
            code = hashlib.sha256(handle.read()).hexdigest()
        parts = (pygments.__version__, markdown_lib.__version__, getattr(nh3, "__version__", "?"), code)
        return hashlib.sha256(repr(parts).encode()).hexdigest()

    def load(self, path: str) -> None:
        try:
            with open(path, encoding="utf-8") as handle:
                data = json.load(handle)
            if data.get("stamp") == self.stamp() and isinstance(data.get("entries"), dict):
                self.entries = data["entries"]
        except (OSError, ValueError, AttributeError):
            self.entries = {}

    def save(self, path: str) -> None:
        if not self.dirty:
            return
        write_json(path, {"stamp": self.stamp(), "entries": self.entries}, separators=(",", ":"))
        self.dirty = False

    def get(self, kind: str, text: str, make) -> str:
        key = kind + hashlib.sha1(text.encode()).hexdigest()
        html = self.entries.get(key)
        if html is None:
            html = self.entries[key] = str(make(text))
            self.dirty = True
        return html


FRAGMENTS = FragmentCache()


def markdown(text: str) -> Markup:
    """Markdown to HTML, sanitised: no script, no event handlers, no javascript: URLs."""
    return Markup(FRAGMENTS.get("m", text, _markdown))


def _markdown(text: str) -> str:
    html = markdown_lib.markdown(text, extensions=["tables", "fenced_code"], output_format="html")
    clean = nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes={"a": {"href", "title"}, "abbr": {"title"}, "td": {"align"}, "th": {"align"}},
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer",
    )
    return clean


# The token classes the stylesheet colours; other tokens (names, operators, whitespace) are plain
# text, which keeps pages small. A <wbr> after . , ( [ { lets wrapped code break between tokens.
STYLED_TOKENS = {
    "k", "kn", "kd", "kr", "kc", "kp", "ow", "s", "s1", "s2", "sa", "sb", "sc", "sd", "se", "sh", "si", "sr",
    "ss", "sx", "dl", "m", "mi", "mf", "mh", "mo", "mb", "il", "c", "c1", "cm", "ch", "cs", "cp", "cpf", "nf",
    "fm", "nc", "nd", "nb", "bp", "ne", "vm", "err",
}  # fmt: skip
_BREAK_AFTER = re.compile(r"([.,(\[{])")


@cache
def _token_class(ttype) -> str:
    while ttype is not None:
        css = STANDARD_TYPES.get(ttype)
        if css in STYLED_TOKENS:
            return css
        ttype = ttype.parent
    return ""


def highlight(code: str) -> Markup:
    """Python source as HTML: coloured tokens in spans, all text escaped."""
    return Markup(FRAGMENTS.get("h", code, _highlight))


def _highlight(code: str) -> str:
    runs: list[list] = []  # [class, text], adjacent tokens of one class merged
    for ttype, value in _LEXER.get_tokens(code.rstrip("\n")):
        css = _token_class(ttype)
        if runs and runs[-1][0] == css:
            runs[-1][1] += value
        else:
            runs.append([css, value])
    html = (f'<span class="{css}">{escape(text)}</span>' if css else _BREAK_AFTER.sub(r"\1<wbr>", str(escape(text))) for css, text in runs)
    return "".join(html).rstrip("\n")


def document(path: str) -> tuple[str, Markup]:
    """A Markdown file of docs/ as a page: its first heading as the title, its HTML sanitised."""
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    title = next((line[2:].strip() for line in text.splitlines() if line.startswith("# ")), os.path.basename(path))
    html = markdown_lib.markdown(text, extensions=["tables", "fenced_code", "toc"], output_format="html")
    headings = {tag: {"id"} for tag in ("h1", "h2", "h3", "h4")}
    clean = nh3.clean(
        html,
        tags=ALLOWED_TAGS | {"h1", "h2"},
        attributes={"a": {"href", "title"}, "td": {"align"}, "th": {"align"}, **headings},
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer",
    )
    return title, Markup(clean)


def notes_markdown(row, fact_values: dict) -> Markup:
    """A row's notes as HTML: facts filled in, each "(checked: label)" showing its check line."""
    lines = {}
    for cell in row.cells:
        if cell.check is not None:
            for line in cell.check.text.splitlines():
                match = CHECKED_LABEL.search(line)
                if match:
                    lines.setdefault(match.group(1), line[: match.start()].strip())

    def checked(match: re.Match) -> str:
        labels = checked_labels(match)
        title = " · ".join(lines.get(label, label) for label in labels)
        return f'(<abbr title="{html_lib.escape(title, quote=True)}">checked</abbr>)'

    return markdown(CHECKED_NOTE.sub(checked, facts.expand(row.notes, fact_values)))


def environment(fact_values: dict | None = None) -> jinja2.Environment:
    fact_values = fact_values or {}
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["markdown"] = lambda text: markdown(facts.expand(text, fact_values))
    env.filters["notes"] = lambda row: notes_markdown(row, fact_values)
    env.filters["highlight"] = highlight
    env.filters["seconds"] = _seconds
    return env


def _seconds(value: float) -> str:
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.1f} s"


def safe_url(url: str) -> str:
    """Only http(s) URLs reach an href; anything else is dropped."""
    return url if url.startswith(("https://", "http://")) else ""


def main_versions(versions: dict) -> list[str]:
    return [f"{name.replace('-cpu', '')} {versions[name]}" for name in BADGE_PACKAGES if name in versions]


def cell_view(sheet: Sheet, row, cell, verification: Verification) -> dict:
    """What a template needs to show one cell."""
    view = {"column": cell.column, "kind": cell.kind, "source": str(cell.source)}
    if cell.kind == TEXT:
        view.update(text=cell.text, url=safe_url(cell.url))
    elif cell.kind == NONE:
        view.update(reason=cell.reason)
    else:
        verdict = verification.verdicts.get((sheet.id, row.id, cell.column))
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
        gpu = [
            {
                "machine": run.machine,
                "lane": run.lane,
                "status": Status.STALE if run.stale else run.result.status,
                "counts": run.counts,
                "device": run.result.device,
                "date": run.result.date,
                "duration": run.result.duration,
                "versions": main_versions(run.result.versions),
            }
            for run in verification.gpu.get((sheet.id, row.id, cell.column), ())
        ]
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
                    "detail": details[0] if details else ("rejected" if rejected else "not run"),
                }
            )
        view.update(
            counterexamples=wrong,
            problem=verdict.problem if verdict else "",
            cpu_only=cell.cpu_only,
            gpu_only=cell.gpu_only,
            gpu=gpu,
            gpu_passed=any(run["counts"] for run in gpu),
            releases=releases.cell_versions(verification, (sheet.id, row.id, cell.column)),
            code=cell.code.text if cell.code else "",
            status=verdict.status if verdict else Status.SKIPPED,
            lanes=lanes,
            passed_lanes=list(verdict.passed_lanes) if verdict else [],
            duration=verdict.duration if verdict else 0.0,
            deprecations=[w for w in warnings if w.get("category") in DEPRECATION_CATEGORIES],
            warnings=[w for w in warnings if w.get("category") not in DEPRECATION_CATEGORIES],
            output=any(lane["stdout"] or lane["stderr"] for lane in lanes),
        )
    return view


def sheet_stats(sheet: Sheet, verification: Verification) -> dict:
    code = passed = rows = 0
    for row in sheet.rows():
        rows += 1
        for cell in row.cells:
            if cell.kind == CODE:
                code += 1
                verdict = verification.verdicts.get((sheet.id, row.id, cell.column))
                passed += bool(verdict and verdict.status == PASSED)
    gpu_jobs = [job for job in verification.gpu_jobs if job.sheet == sheet.id]
    gpu_passed, gpu_possible = ledger.coverage(gpu_jobs, verification.gpu)
    cpu_only = sorted({c.name for c in sheet.columns if any(lane in ("tensorflow", "tf1", "keras@tensorflow") for lane in c.lanes)})
    return {
        "rows": rows,
        "code": code,
        "passed": passed,
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
                                "status": result.status,
                                "duration": round(result.duration, 4),
                                "versions": result.versions,
                                "device": result.device,
                                "date": result.date,
                                "warnings": list(result.warnings),
                                "source": str(cell.source),
                                "error": result.error,
                            }
                        )
    return records


def records_csv(records: list[dict]) -> str:
    columns = ("sheet", "section", "row", "column", "lane", "status", "duration", "device", "date", "versions", "warnings", "source")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for record in records:
        flat = dict(record)
        flat["versions"] = " ".join(f"{k}={v}" for k, v in sorted(record["versions"].items()))
        flat["warnings"] = " | ".join(f"{w.get('category')}: {w.get('message')}" for w in record["warnings"])
        writer.writerow([flat[c] for c in columns])
    return out.getvalue()


def asset_version(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:10]


def render_site(sheets: list[Sheet], verification: Verification, extra_pages=(), extra_nav=()) -> dict[str, bytes]:
    """The whole site as {relative path: content}.

    `extra_pages` are callables (env, context) -> {path: bytes}; `extra_nav` their (title, href).
    """
    env = environment(facts.compute(sheets))
    files: dict[str, bytes] = {}
    static_dir = os.path.join(TEMPLATES, "static")
    for name in sorted(os.listdir(static_dir)):
        with open(os.path.join(static_dir, name), "rb") as handle:
            files[f"static/{name}"] = handle.read()
    # What readers load on demand (reader.py): the search index and each sheet's runnable scripts.
    # And each sheet's "Not this" lists (the counterexamples), which would double the largest page.
    files[reader.INDEX_PATH] = reader.script("search", reader.search_index(sheets))
    sheet_rows = {sheet.id: {row.id: [cell_view(sheet, row, cell, verification) for cell in row.cells] for row in sheet.rows()} for sheet in sheets}
    for sheet in sheets:
        files[f"data/{sheet.id}.runnable.js"] = reader.script(f"runnable/{sheet.id}", reader.runnable_scripts(sheet, verification))
        files[f"data/{sheet.id}.not-this.js"] = reader.script(f"not-this/{sheet.id}", counterexample_bodies(env, sheet_rows[sheet.id]))
    assets = {name: asset_version(data) for name, data in files.items()}
    assets["build"] = asset_version(b"".join(files[name] for name in sorted(files) if name.endswith(".js") and not name.startswith("static/")))
    nav = [{"id": sheet.id, "title": sheet.title, "href": f"{sheet.id}.html", "sheet": True} for sheet in sheets]
    nav += [{"id": href.removesuffix(".html"), "title": title, "href": href} for title, href in extra_nav]
    nav.append({"id": "compare", "title": "Compare", "href": "compare.html"})
    context = {"nav": nav, "assets": assets, "sheets": sheets, "verification": verification, "files": files}

    def page(template: str, path: str, **values) -> None:
        html = env.get_template(template).render(**values, nav=nav, assets=assets, page_path=path)
        files[path] = html.encode()

    all_records = verification_records(sheets, verification)
    index_entries = []
    for sheet in sheets:
        rows = sheet_rows[sheet.id]
        stats = sheet_stats(sheet, verification)
        index_entries.append({"sheet": sheet, "stats": stats, "verified": reader.last_verified(sheet, verification)})
        same = {row_id: outcome for (sheet_id, row_id), outcome in verification.same.items() if sheet_id == sheet.id}
        page("sheet.html", f"{sheet.id}.html", sheet=sheet, rows=rows, same=same, stats=stats, provenance=provenance([sheet], verification))
        sheet_records = [r for r in all_records if r["sheet"] == sheet.id]
        files[f"data/{sheet.id}.json"] = _json(sheet_export(sheet, sheet_records, verification))
        files[f"data/{sheet.id}.csv"] = records_csv(sheet_records).encode()
    gpu = gpu_coverage(sheets, verification)
    page("index.html", "index.html", entries=index_entries, provenance=provenance(sheets, verification), gpu=gpu)
    gpu_records = ledger_records(verification)
    environments = releases.environment_table(verification)
    files["verification.json"] = _json({"format": 1, "cells": all_records, "gpu": gpu_records, "environments": environments})
    counts = {**_counts(all_records), **truth_counts(sheets, verification), "gpu_passed": gpu["passed"], "gpu_possible": gpu["possible"], "gpu": gpu}
    page("verification.html", "verification.html", records=report_rows(all_records), counts=counts, gpu_records=gpu_records, environments=environments)
    for name, target in SITE_DOCS.items():
        title, body = document(os.path.join(DOCS, name))
        page("doc.html", target, title=title, body=body)
    page("compare.html", "compare.html", pairs=reader.compare_pairs(sheets))
    page("offline.html", "offline.html", inside=False, zip_name=reader.OFFLINE_ZIP)
    for extra in extra_pages:
        files.update(extra(env, context))
    # The offline copy: the whole site in a zip, where the offline page says it is that copy.
    inside = env.get_template("offline.html").render(inside=True, zip_name=reader.OFFLINE_ZIP, nav=nav, assets=assets, page_path="offline.html")
    files[reader.OFFLINE_ZIP] = reader.offline_zip(files, {"offline.html": inside.encode()})
    return files


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
                    "status": Status.STALE if run.stale else run.result.status,
                    "duration": round(run.result.duration, 4),
                    "versions": run.result.versions,
                    "device": run.result.device,
                    "date": run.result.date,
                }
            )
    return records


def report_rows(records: list[dict]) -> list[dict]:
    """The report's rows: failures first, then in content order."""
    rows = []
    for index, record in enumerate(records):
        rank = STATUS_ORDER.get(record["status"], 0)
        version_text = " · ".join(main_versions(record["versions"]))
        rows.append({**record, "rank": rank, "order": index, "version_text": version_text})
    return sorted(rows, key=lambda r: (r["rank"] == STATUS_ORDER[PASSED], r["rank"], r["order"]))


def counterexample_bodies(env, rows: dict) -> dict:
    """The HTML of each cell's "Not this" list, by row and column: loaded by the page on opening."""
    macro = env.get_template("macros.html").module.counterexample_body
    bodies: dict[str, dict[str, str]] = {}
    for row_id, views in rows.items():
        for view in views:
            if view.get("counterexamples"):
                bodies.setdefault(row_id, {})[view["column"]] = str(macro(view))
    return bodies


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


def _counts(records: list[dict]) -> dict:
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
                    entry["verification"] = by_cell.get((row.id, cell.column), [])
                    entry.update(releases.cell_export(verification, (sheet.id, row.id, cell.column)))
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


def _json(data) -> bytes:
    # compact: the C encoder serves only indent=None, and these files are for programs
    return (json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


STATUS_ORDER = {status: index for index, status in enumerate(STATUSES)}
