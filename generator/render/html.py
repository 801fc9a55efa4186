"""The site: every page and data file, as a mapping of relative path to bytes (writing it out is
sitefiles' job). The sheets, the index, the report, the compare and offline pages and the docs are
built in; the build adds its own pages (the guide, the trade-offs, the benchmarks) as `Page`s."""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import jinja2

from generator.load import facts
from generator.model import Sheet
from generator.render import compare, reader, releases
from generator.render.export import (
    compact_json,
    ledger_records,
    mutation_records,
    sheet_csv,
    sheet_export,
    status_counts,
    verification_records,
)
from generator.render.markup import DOCS, TEMPLATES, FragmentCache, document, environment
from generator.render.views import (
    cell_view,
    gpu_coverage,
    lazy_bodies,
    mutation_summary,
    provenance,
    report_rows,
    see_also_links,
    sheet_stats,
    truth_counts,
)
from generator.verify.verification import Verification

SITE_DOCS = {"data-format.md": "data-format.html", "mutation.md": "mutation.html"}  # docs/ files published as pages of the site


def asset_version(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:10]


def column_labels_css(sheets: list[Sheet]) -> str:
    """On a narrow screen each row is a card whose cells are labelled with their column's name: the
    labels as CSS rules, one for each column id with its most common name and one for each sheet that
    names it otherwise, rather than the name repeated on every cell (5 KB of the largest page). The
    site's Content-Security-Policy allows no inline style, so the rules go into the stylesheet."""
    names: dict[str, Counter] = {}
    for sheet in sheets:
        for column in sheet.columns:
            names.setdefault(column.id, Counter())[column.name] += 1
    common = {column_id: counts.most_common(1)[0][0] for column_id, counts in sorted(names.items())}
    rules = [f"table.sheet td[data-col={_css_string(column_id)}]::before {{ content: {_css_string(name)}; }}" for column_id, name in common.items()]
    for sheet in sheets:
        rules += [
            f"table.sheet[data-sheet={_css_string(sheet.id)}] td[data-col={_css_string(column.id)}]::before {{ content: {_css_string(column.name)}; }}"
            for column in sheet.columns
            if column.name != common[column.id]
        ]
    labels = "\n/* the column labels of the cards on narrow screens (generated from the sheets) */\n@media (max-width: 40rem) {\n" + "\n".join(f"  {rule}" for rule in rules) + "\n}\n"
    return labels + column_choice_css(sheets)


def column_choice_css(sheets: list[Sheet]) -> str:
    """The columns a reader chose, as the style sheet shows them: site.js puts `hide-col-ID` on <html>
    for each column left out and `ncols-N` for how many are shown, before the page is first drawn
    (so nothing moves, and print shows the same columns)."""
    ids = sorted({column.id for sheet in sheets for column in sheet.columns})
    widest = max((len(sheet.columns) for sheet in sheets), default=0)
    hide = ",\n".join(f"html.hide-col-{column_id} table.sheet [data-col={_css_string(column_id)}]" for column_id in ids)
    sizes = "\n".join(f"  html.ncols-{n} table.sheet[data-ncols] {{ min-width: calc(var(--title-w) + {n} * var(--col-min)); }}" for n in range(1, widest + 1))
    return f"\n/* the columns chosen (generated from the sheets) */\n{hide} {{ display: none; }}\n@media (min-width: 40.01rem) {{\n{sizes}\n}}\n" if ids else ""


def _css_string(text: str) -> str:
    """`text` as a quoted CSS string: quotes, backslashes, line breaks and angle brackets escaped."""
    return '"' + "".join(f"\\{ord(c):x} " if c in '"\\<>\n\r' else c for c in text) + '"'


_ANCHOR_LINK = re.compile(rb'href="([a-z0-9][a-z0-9-]*\.html)#([^"]+)"')
_LOCAL_ANCHOR = re.compile(rb'href="#([^"]+)"')


def _anchor_pages(sheet: Sheet) -> dict[str, str]:
    """Every anchor of a sheet's rows and sections -> its page: the row, its note (`note-<row>`,
    which notes link to as often as to the row) and the section."""
    homes = sheet.page_of()
    homes.update({f"note-{row.id}": homes[row.id] for row in sheet.rows() if row.id in homes})
    return homes


def forward_anchors(files: dict[str, bytes], sheets: list[Sheet]) -> None:
    """Links to `<sheet>.html#<row or section>` where the sheet is split into pages and the anchor is on
    another page of it (an index's section list, a guide's evidence, a note's link written by hand)
    are rewritten to that page, in every HTML file: a link works without scripts, and the link checker
    sees it land. (Pages also forward such anchors when they arrive by hand-typed URLs: site.js.)"""
    homes_of = {sheet.id: _anchor_pages(sheet) for sheet in sheets}
    moved = {}
    for sheet in sheets:
        for anchor, path in homes_of[sheet.id].items():
            if path != f"{sheet.id}.html":
                moved[(f"{sheet.id}.html".encode(), anchor.encode())] = path.encode()
    if not moved:
        return

    def rewrite(match: re.Match) -> bytes:
        target = moved.get((match.group(1), match.group(2)))
        return match.group(0) if target is None else b'href="' + target + b"#" + match.group(2) + b'"'

    for name, data in files.items():
        if name.endswith(".html"):
            files[name] = _ANCHOR_LINK.sub(rewrite, data)
    # a note's "#row" link, written for a one-page sheet, on a page of it that no longer holds the row
    for sheet in sheets:
        homes = homes_of[sheet.id]
        for _, path, _ in sheet.parts() if sheet.pages else ():

            def local(match: re.Match, path=path, homes=homes) -> bytes:
                home = homes.get(match.group(1).decode())
                return match.group(0) if home is None or home == path else b'href="' + home.encode() + b"#" + match.group(1) + b'"'

            files[path] = _LOCAL_ANCHOR.sub(local, files[path])


@dataclass(frozen=True)
class Page:
    """A page the build adds: its title in the navigation, its path, and how it renders, given
    the Jinja environment and the site's context (nav, assets, sheets, verification, files)."""

    title: str
    path: str
    render: Callable[[jinja2.Environment, dict], bytes]


def render_site(
    sheets: list[Sheet], verification: Verification, pages: Sequence[Page] = (), fragments: FragmentCache | None = None
) -> dict[str, bytes]:
    """The whole site as {relative path: content}; `fragments` keeps highlighted code and Markdown
    between builds (a fresh one renders everything)."""
    env = environment(facts.compute(sheets), fragments)
    files: dict[str, bytes] = {}
    static_dir = os.path.join(TEMPLATES, "static")
    for name in sorted(os.listdir(static_dir)):
        with open(os.path.join(static_dir, name), "rb") as handle:
            files[f"static/{name}"] = handle.read()
    files["static/style.css"] += column_labels_css(sheets).encode()
    # What readers load on demand (reader.py): the search index and each sheet's runnable scripts.
    # And each sheet's "Not this" lists (the counterexamples), which would double the largest page,
    # and its badges' runs, a quarter of it.
    files[reader.INDEX_PATH] = reader.script("search", reader.search_index(sheets, verification))
    sheet_rows = {sheet.id: {row.id: [cell_view(sheet, row, cell, verification) for cell in row.cells] for row in sheet.rows()} for sheet in sheets}
    # One set per page of a sheet (a sheet split into pages loads only its page's).
    for sheet in sheets:
        scripts = reader.runnable_scripts(sheet, verification)
        for _, path, sections in sheet.parts():
            stem, part_rows = path.removesuffix(".html"), {row.id for section in sections for row in section.rows}
            views = {row_id: views for row_id, views in sheet_rows[sheet.id].items() if row_id in part_rows}
            files[f"data/{stem}.runnable.js"] = reader.script(f"runnable/{stem}", {row: s for row, s in scripts.items() if row in part_rows})
            files[f"data/{stem}.not-this.js"] = reader.script(f"not-this/{stem}", lazy_bodies(env, views, "counterexample_body", "counterexamples"))
            files[f"data/{stem}.runs.js"] = reader.script(f"runs/{stem}", lazy_bodies(env, views, "runs", "lazy_runs"))
    assets = {name: asset_version(data) for name, data in files.items()}
    assets["build"] = asset_version(b"".join(files[name] for name in sorted(files) if name.endswith(".js") and not name.startswith("static/")))
    nav = [{"id": sheet.id, "title": sheet.title, "href": f"{sheet.id}.html", "sheet": True} for sheet in sheets]
    nav += [{"id": page.path.removesuffix(".html"), "title": page.title, "href": page.path} for page in pages]
    nav.append({"id": "compare", "title": "Compare", "href": "compare.html"})
    context = {"nav": nav, "assets": assets, "sheets": sheets, "verification": verification, "files": files}

    def page(template: str, path: str, **values) -> None:
        html = env.get_template(template).render(**values, nav=nav, assets=assets, page_path=path)
        files[path] = html.encode()

    all_records = verification_records(sheets, verification)
    # what each column id runs, for carrying a comparison to a sheet that names its columns otherwise (site.js)
    families = " ".join(dict.fromkeys(f"{c.id}:{reader.column_family(c)}" for sheet in sheets for c in sheet.columns))
    links = see_also_links(sheets)
    index_entries = []
    for sheet in sheets:
        rows = sheet_rows[sheet.id]
        stats = sheet_stats(sheet, verification)
        index_entries.append({"sheet": sheet, "stats": stats, "verified": reader.last_verified(sheet, verification)})
        same = {row_id: outcome for (sheet_id, row_id), outcome in verification.same.items() if sheet_id == sheet.id}
        parts = sheet.parts()
        listed = [{"title": part.title, "href": path, "rows": " ".join(f"section-{s.id} " + " ".join(r.id for r in s.rows) for s in sections)}
                  for part, path, sections in parts] if len(parts) > 1 else []  # fmt: skip
        for index, (part, path, sections) in enumerate(parts):
            page("sheet.html", path, sheet=sheet, part=part if listed else None, first=index == 0, sections=sections, parts=listed, families=families, links=links.get(sheet.id, {}),
                 stem=path.removesuffix(".html"), rows=rows, same=same, stats=stats, provenance=provenance([sheet], verification))  # fmt: skip
        sheet_records = [r for r in all_records if r["sheet"] == sheet.id]
        files[f"data/{sheet.id}.json"] = compact_json(sheet_export(sheet, sheet_records, verification))
        files[f"data/{sheet.id}.csv"] = sheet_csv(sheet, verification).encode()
    gpu = gpu_coverage(sheets, verification)
    page("index.html", "index.html", entries=index_entries, provenance=provenance(sheets, verification), gpu=gpu)
    gpu_records = ledger_records(verification)
    environments = releases.environment_table(verification)
    files["verification.json"] = compact_json({"format": 1, "cells": all_records, "gpu": gpu_records, "environments": environments, "mutation": mutation_records(sheets, verification)})
    counts = {**status_counts(all_records), **truth_counts(sheets, verification), "gpu_passed": gpu["passed"], "gpu_possible": gpu["possible"], "gpu": gpu}
    mutation = mutation_summary(sheets, verification)
    page("verification.html", "verification.html", records=report_rows(all_records), counts=counts, gpu_records=gpu_records, environments=environments, mutation=mutation)
    for name, target in SITE_DOCS.items():
        title, body = document(os.path.join(DOCS, name))
        page("doc.html", target, title=title, body=body)
    page("compare.html", "compare.html", pairs=compare.compare_pairs(sheets, verification))
    page("offline.html", "offline.html", inside=False, zip_name=reader.OFFLINE_ZIP)
    for extra in pages:
        files[extra.path] = extra.render(env, context)
    forward_anchors(files, sheets)
    # The offline copy: the whole site in a zip, where the offline page says it is that copy.
    inside = env.get_template("offline.html").render(inside=True, zip_name=reader.OFFLINE_ZIP, nav=nav, assets=assets, page_path="offline.html")
    files[reader.OFFLINE_ZIP] = reader.offline_zip(files, {"offline.html": inside.encode()})
    return files
