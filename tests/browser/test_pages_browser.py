"""A sheet split into pages (sheet.yaml `pages:`), in Chromium on the real site: a link to a row on
another page of the sheet is forwarded there, search links to the row's own page, moving between the
pages keeps the chosen columns, and a page loads its own lazy files."""

from __future__ import annotations

import re

from generator.load import content
from tests.conftest import ROOT


def _split_sheet():
    for sheet in content.load(f"{ROOT}/content"):
        if sheet.pages:
            return sheet
    raise AssertionError("no sheet of the content is split into pages")


def _a_row_on_a_later_page(sheet):
    _, path, sections = sheet.parts()[-1]
    return path, sections[0].rows[0]


def test_a_link_to_a_row_on_another_page_of_the_sheet_is_forwarded_there(open_page, real):
    sheet = _split_sheet()
    path, row = _a_row_on_a_later_page(sheet)
    page, watch = open_page(real + f"{sheet.id}.html?cols=pytorch,jax#{row.id}")
    page.wait_for_url(re.compile(re.escape(path) + r"\?cols=pytorch,jax#" + re.escape(row.id)))
    page.locator(f"tr#{row.id}").wait_for()
    watch.assert_clean()


def test_search_links_to_the_rows_own_page(open_page, real):
    sheet = _split_sheet()
    path, row = _a_row_on_a_later_page(sheet)
    page, watch = open_page(real + "index.html")
    page.focus("#site-search")
    page.keyboard.type(row.title)
    link = page.locator("#site-search-results li a").first
    link.wait_for()
    hrefs = page.eval_on_selector_all("#site-search-results li a", "els => els.map(a => a.getAttribute('href'))")
    assert f"{path}#{row.id}" in hrefs, hrefs
    watch.assert_clean()


def test_the_pages_of_a_sheet_keep_the_chosen_columns_and_load_their_own_runs(open_page, real):
    sheet = _split_sheet()
    path, _ = _a_row_on_a_later_page(sheet)
    page, watch = open_page(real + f"{sheet.id}.html?cols=jax,tensorflow")
    page.click(f"nav.parts a[href^='{path}']")
    page.wait_for_url(re.compile(re.escape(path) + r"\?cols=jax,tensorflow$"))
    assert page.locator("nav.parts a[aria-current=page]").get_attribute("href").startswith(path)
    badge = page.locator("td[data-col=jax] details.badge[data-lazy=runs]").first
    badge.locator("summary").click()
    badge.locator("dl.runs dt").first.wait_for()
    assert "passed" in badge.locator("dl.runs").inner_text()
    watch.assert_clean()
