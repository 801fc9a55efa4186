"""The build, stage by stage: load → validate → verify → render → write."""

from __future__ import annotations

import os
from dataclasses import dataclass

from generator import integrity
from generator.bench import chart as bench_chart
from generator.bench import results as bench_results
from generator.load import content, pages
from generator.render import html as render
from generator.render import sitefiles
from generator.render.markup import FragmentCache
from generator.verify.cache import Cache
from generator.verify.verification import Verification, verify

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass
class Options:
    content_dir: str = "content"
    out_dir: str = "site"
    cache_dir: str = ".cache"
    only: set | None = None
    force: bool = False
    keep_going: bool = False
    cores: int = os.cpu_count() or 1
    show_progress: bool = True
    memory_cap: int | None = None
    benchmarks: bool = True
    sandbox: str | None = None  # the lane workers' sandbox policy (verify/sandbox.py); None: its default
    preview: bool = False  # render only the sheets that hold the `only` rows, and no guide, trade-off or benchmarks page


@dataclass
class Outcome:
    verification: Verification
    written: bool
    superseded: bool = False  # not written: a build that started later had already published its site
    tampered: tuple[str, ...] = ()  # not written: files the build reads after verification changed while cells ran

    @property
    def failures(self):
        return self.verification.failures()


def run_verification(options: Options, sheets=None) -> tuple[list, Verification]:
    """Load the content (raising ContentInvalid) and verify its code cells."""
    sheets = sheets if sheets is not None else content.load(options.content_dir)
    verification = verify(
        sheets,
        cache=Cache(options.cache_dir),
        cores=options.cores,
        force=options.force,
        only=options.only,
        show_progress=options.show_progress,
        memory_cap=options.memory_cap,
        ledger_dir=os.path.join(options.content_dir, "ledger"),
        versions_dir=os.path.join(options.content_dir, "versions"),
        mutants_dir=os.path.join(options.content_dir, "mutants"),
        sandbox=options.sandbox,
    )
    return sheets, verification


def build(options: Options) -> Outcome:
    """Build the site; with failures and no keep_going the last good site stays in place."""
    ticket = sitefiles.ticket(options.out_dir)  # builds that overlap: the one started last keeps its site
    sheets = content.load(options.content_dir)
    guide_pages = pages.load(options.content_dir, sheets)  # content errors surface before any cell runs
    # the benchmarks are data made by `make bench`: the build renders the published run, never runs one
    measured = bench_results.load_published(os.path.join(options.content_dir, "benchmarks"), ROOT) if options.benchmarks else None
    if options.preview and options.only is not None:  # `make preview ROW=…`: the row's sheet alone, in seconds
        sheets, guide_pages, measured = preview_sheets(sheets, options.only), {}, None
    fragments_path = os.path.join(options.cache_dir, "fragments.json")
    fragments = FragmentCache()
    fragments.load(fragments_path)  # before any cell runs: a cell cannot change what this build renders with
    before = integrity.Snapshot.take(integrity.watched(options.content_dir))
    sheets, verification = run_verification(options, sheets)
    changed = before.changed()
    if changed:
        return Outcome(verification, written=False, tampered=tuple(changed))
    if verification.failures() and not options.keep_going:
        return Outcome(verification, written=False)
    site_pages = [
        render.Page(title, f"{kind}.html", lambda env, context, kind=kind: pages.render(env, kind, guide_pages[kind], context))
        for kind, title in (("guide", "Guide"), ("tradeoffs", "Trade-offs"))
        if guide_pages.get(kind)
    ]
    if measured is not None:
        site_pages.append(render.Page("Benchmarks", "benchmarks.html", lambda env, context: benchmarks_page(env, context, measured)))
    files = render.render_site(sheets, verification, pages=site_pages, fragments=fragments)
    try:
        fragments.save(fragments_path)
    except OSError as error:  # a cache that cannot be written only costs time, but is said
        verification.warnings.add(f"{fragments_path} could not be written ({error.strerror or error}): the next build highlights every cell again")
    written = sitefiles.publish(files, options.out_dir, ticket)
    return Outcome(verification, written=written, superseded=not written)


def preview_sheets(sheets: list, only: set) -> list:
    """The sheets that hold a row of `only` (an unknown id is an error, with the closest ones)."""
    from generator.verify.verification import check_rows

    check_rows(sheets, only)
    return [sheet for sheet in sheets if any(row.id in only or f"{sheet.id}/{row.id}" in only for row in sheet.rows())]


def benchmarks_page(env, context: dict, measured: dict) -> bytes:
    """The benchmarks page: the measured figures, their charts and the seed claims' verdicts."""
    charts = {workload: bench_chart.render_chart_svg(result) for workload, result in measured["workloads"].items()}
    html = env.get_template("benchmarks.html").render(
        bench=measured, charts=charts, claims=bench_results.claim_verdicts(measured), nav=context["nav"], assets=context["assets"], page_path="benchmarks.html"
    )
    return html.encode()
