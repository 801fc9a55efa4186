"""The build, stage by stage: load → validate → verify → render → write."""

from __future__ import annotations

import os
from dataclasses import dataclass

from . import content, pages, render, sitefiles
from .cache import Cache
from .verify import Verification, verify


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


@dataclass
class Outcome:
    verification: Verification
    written: bool

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
    )
    return sheets, verification


def build(options: Options) -> Outcome:
    """Build the site; with failures and no keep_going the last good site stays in place."""
    sheets = content.load(options.content_dir)
    guide_pages = pages.load(options.content_dir, sheets)  # content errors surface before any cell runs
    sheets, verification = run_verification(options, sheets)
    if verification.failures() and not options.keep_going:
        return Outcome(verification, written=False)
    extra, nav = [lambda env, context: pages.render(env, guide_pages, context)], []
    nav += [(title, href) for key, title, href in (("guide", "Guide", "guide.html"), ("tradeoffs", "Trade-offs", "tradeoffs.html")) if guide_pages.get(key)]
    files = render.render_site(sheets, verification, extra_pages=extra, extra_nav=nav)
    sitefiles.publish(files, options.out_dir)
    return Outcome(verification, written=True)
