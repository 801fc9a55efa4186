"""The reader features in headless Chromium: search across sheets, the compare view, "Copy
runnable" (whose copied text is then run), the offline zip opened from disk; axe on their views;
the largest sheet's weight with what it loads, and that the index loads only on demand.

Measurements go to tests/output/reader-metrics.json.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
import zipfile
from urllib.parse import unquote, urlsplit

from generator.load import content
from generator.model import CODE
from generator.render import reader
from tests.browser.test_site_browser import _axe, _Links, visible_column_names, visible_rows
from tests.conftest import ROOT

LAZY = ("search-index.js", "static/reader.js", ".runnable.js", ".not-this.js", ".runs.js")
METRICS = os.path.join(ROOT, "tests", "output", "reader-metrics.json")


def _record(key: str, value) -> None:
    os.makedirs(os.path.dirname(METRICS), exist_ok=True)
    data = {}
    if os.path.exists(METRICS):
        with open(METRICS, encoding="utf-8") as handle:
            data = json.load(handle)
    data[key] = value
    with open(METRICS, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=1)


def _requests(page) -> list[str]:
    seen: list[str] = []
    page.on("request", lambda request: seen.append(request.url))
    return seen


def _in_view(page, selector: str) -> bool:
    return page.eval_on_selector(
        selector, "el => { const r = el.getBoundingClientRect(); return r.top >= 0 && r.top < innerHeight && r.height > 0; }"
    )


# ---------------------------------------------------------------------------------------------
# search across sheets


def test_search_from_another_sheet_finds_the_row_and_scrolls_to_it(open_page, real, real_dir):
    page, watch = open_page(real + "frameworks.html")
    seen = _requests(page)
    page.wait_for_load_state("networkidle")
    loaded = page.evaluate("() => performance.getEntriesByType('resource').map(e => e.name)")
    assert any("static/site.js" in url for url in loaded)  # the entries do list what the page loaded
    assert not [url for url in loaded + seen if any(lazy in url for lazy in LAZY)], "loaded before it was asked for"

    box = page.locator("#site-search")
    # Cold, timed in the page: from focus (which loads the search code and its index) to the
    # first result in the list, the query typed right after the focus.
    page.evaluate(
        """() => { window.__t = {}; const box = document.getElementById('site-search');
        box.addEventListener('focus', () => { window.__t.focus = performance.now(); }, {once: true});
        new MutationObserver(() => { if (!window.__t.first && document.querySelector('#site-search-results li'))
            window.__t.first = performance.now(); }).observe(document.getElementById('site-search-results'), {childList: true}); }"""
    )
    box.focus()
    page.keyboard.type("GradScaler")
    page.wait_for_selector("#site-search-results li a")
    cold = page.evaluate("window.__t.first - window.__t.focus")
    index_ms = int(page.get_attribute(".site-search", "data-load-ms") or -1)
    assert [url for url in seen if "search-index.js" in url], "the index was not loaded on focus"
    # Once loaded: from an input event to its results in the page (matching every row, drawing the list).
    per_query = page.evaluate(
        """() => ['vmap', 'GradScaler', 'nnx.Conv', 'cross entropy', 'grad'].map(q => {
            const box = document.getElementById('site-search');
            box.value = q;
            const t0 = performance.now();
            box.dispatchEvent(new Event('input'));
            return performance.now() - t0;
        })"""
    )
    box.fill("GradScaler")
    first = page.locator("#site-search-results li a").first
    assert "Training" in first.inner_text() and "PyTorch: torch.amp.GradScaler" in first.inner_text()
    href = first.get_attribute("href")
    assert re.match(r"training(-[a-z]+)?\.html#", href), href  # the row's own page of the (split) sheet
    row_id = unquote(href.split("#", 1)[1])

    # The other examples of the issue: an API name, a dotted name as written in the code.
    for query, column, api in (("vmap", "PyTorch", "torch.vmap"), ("nnx.Conv", "JAX / Flax", "flax.nnx.Conv")):
        box.fill(query)
        hit = page.locator("#site-search-results li a").first
        assert f"{column}: {api}" in hit.inner_text(), (query, hit.inner_text())
    box.fill("no such api zzzz")
    assert page.locator("#site-search-status").inner_text() == "No row in any sheet matches. None has “zzzz”."

    # Jump: the keyboard too (type, arrow down, Enter on the hit).
    box.fill("GradScaler")
    box.press("ArrowDown")
    assert page.evaluate("document.activeElement.getAttribute('href')") == href
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"training(-[a-z]+)?\.html#"))
    page.wait_for_function("() => window.scrollY > 0")
    assert _in_view(page, f"#{row_id}")
    assert page.evaluate("document.querySelector(':target').id") == row_id

    _record("search", {
        "index_bytes": (real_dir / reader.INDEX_PATH).stat().st_size,
        "index_gzip_bytes": len(gzip.compress((real_dir / reader.INDEX_PATH).read_bytes(), 9)),
        "first_result_ms_from_focus_cold": round(cold, 1),
        "index_load_ms": index_ms,
        "query_to_results_ms": [round(t, 2) for t in per_query],
    })
    watch.assert_clean()


def test_without_its_index_search_falls_back_to_the_page_filter_and_says_so(open_page, real):
    page, _ = open_page(real + "frameworks.html")
    page.route("**/search-index.js*", lambda route: route.abort())
    page.focus("#site-search")
    page.keyboard.type("Conv2D")
    page.wait_for_function("() => document.querySelector('.site-search').getAttribute('data-ready') === 'failed'")
    assert "filters this page's rows only" in page.locator("#site-search-status").inner_text()
    assert page.input_value("#filter") == "Conv2D"
    shown = visible_rows(page)
    direct, _ = open_page(real + "frameworks.html")
    direct.fill("#filter", "Conv2D")
    assert shown == visible_rows(direct) and 0 < len(shown) < direct.locator("tr.row").count()


# ---------------------------------------------------------------------------------------------
# compare two columns


def test_compare_view_differences_only_in_the_url(open_page, real, real_dir):
    from tests.browser.test_view_browser import _pairs

    counts = _pairs(real_dir)  # compare.html's counts: {(a, b, page): (differ, rows, lacking)}
    differ, rows, lacking = counts[("pytorch", "jax", "frameworks")]

    page, watch = open_page(real + "frameworks.html")
    page.get_by_role("button", name="Compare two columns").click()
    page.wait_for_selector(".compare[data-ready=yes]")
    page.get_by_label("First column").select_option("pytorch")
    page.get_by_label("Second column").select_option("jax")
    assert visible_column_names(page) == ["PyTorch", "JAX / Flax"]
    every = len(visible_rows(page))
    assert every == rows - lacking  # rows one lacks: hidden unless asked
    page.get_by_label("Differences only").check()
    assert page.url.endswith("frameworks.html?compare=pytorch,jax&diff=1")
    shown = visible_rows(page)
    assert len(shown) == differ < every
    # A hidden row is one whose two columns a `same:` proof covers, with no difference declared:
    # their code differs, but not what it computes.
    hidden = [r for r in page.evaluate("() => [...document.querySelectorAll('tr.row')].map(r => r.id)") if r not in shown]
    same_row = next(r for r in hidden if page.locator(f"#{r} td[data-col=pytorch].kind-code").count())
    assert page.locator(f"#{same_row} td[data-col=pytorch] pre").inner_text() != page.locator(f"#{same_row} td[data-col=jax] pre").inner_text()
    assert "same result in all" in page.locator(f"#{same_row} th").inner_text()
    # each row shown says why
    assert all(page.locator(f"#{r} .why-shown").inner_text().startswith("Shown: ") for r in shown)
    page.get_by_label("Rows one of them lacks").check()
    assert page.url.endswith("?compare=pytorch,jax&diff=1&lacking=1")
    assert len(visible_rows(page)) == differ + lacking

    # The URL alone restores the view, and the header's sheet links carry it to every sheet.
    shared, _ = open_page(real + "frameworks.html?compare=pytorch,jax&diff=1")
    shared.wait_for_selector(".compare[data-ready=yes]")
    assert visible_column_names(shared) == ["PyTorch", "JAX / Flax"]
    assert len(visible_rows(shared)) == differ
    assert shared.get_by_label("Differences only").is_checked()
    shared.click(".site-header nav a[href^='training.html']")
    shared.wait_for_url(re.compile(r"training\.html"))
    shared.wait_for_selector(".compare[data-ready=yes]")
    assert shared.url.endswith("training.html?compare=pytorch,jax&diff=1")
    assert len(visible_rows(shared)) == counts[("pytorch", "jax", "training")][0]
    assert visible_column_names(shared) == ["PyTorch", "JAX (Optax / Flax)"]

    # The compare page links every pair to every sheet that has both.
    hub, _ = open_page(real + "compare.html")
    link = hub.locator("a[href='arrays.html?compare=pytorch,jax&diff=1']")
    assert link.count() == 1
    link.click()
    hub.wait_for_url(re.compile(r"arrays\.html"))
    hub.wait_for_selector(".compare[data-ready=yes]")
    assert len(visible_rows(hub)) == counts[("pytorch", "jax", "arrays")][0]
    shared.get_by_role("button", name="Stop comparing").click()
    assert "compare=" not in shared.url and len(visible_column_names(shared)) == 4
    watch.assert_clean()


# ---------------------------------------------------------------------------------------------
# copy runnable: what the button copies runs


LANES = ("torch", "torch-dist", "jax", "tensorflow", "tf1", "keras@jax", "keras@torch", "keras@tensorflow", "pytensor")


def _one_cell_per_lane() -> dict[str, tuple[str, str, str, list[str]]]:
    """lane -> (page, row, column, the check's own lines): the first code cell of each lane that
    has a hidden setup (so the script has more than the code shown), leaving out Orbax
    checkpoints, which write asynchronously and take long."""
    chosen = {}
    for sheet in content.load(os.path.join(ROOT, "content")):
        for row in sheet.rows():
            for cell in row.cells:
                if cell.kind != CODE:
                    continue
                for lane in cell.lanes:
                    if lane not in chosen and cell.setup and "orbax" not in cell.code.text + cell.setup.text:
                        shown = (cell.code.text + "\n" + (cell.setup.text if cell.setup else "")).splitlines()
                        own = [line for line in (cell.check.text if cell.check else "").splitlines() if line.strip() and line not in shown]
                        chosen[lane] = (sheet.page_of()[row.id].removesuffix(".html"), row.id, cell.column, own)  # the row's own page
    return chosen


def _copy_and_run(page, row: str, column: str, lane: str, own_check: list[str], tmp_path, temp_dir=None) -> tuple[str, subprocess.CompletedProcess]:
    """Click the cell's Copy runnable, read the clipboard, run what it holds twice in one working
    directory (TMPDIR=temp_dir when given); return the text and the second run."""
    cell = page.locator(f"[id='{row}'] td[data-col='{column}']")
    cell.scroll_into_view_if_needed()
    button = cell.locator("button.copy-run")
    # a cell copied just before (several lanes can pick the same cell) says "Copied" for 1.6 s
    page.wait_for_function(
        "(sel) => document.querySelector(sel).querySelector('.copy-label').textContent !== 'Copied'",
        arg=f"[id='{row}'] td[data-col='{column}'] button.copy-run",
        timeout=10_000,
    )
    assert button.inner_text().startswith("Copy runnable")
    page.evaluate("navigator.clipboard.writeText('')")
    button.click()
    page.wait_for_function(
        "(sel) => document.querySelector(sel).querySelector('.copy-label').textContent === 'Copied'",
        arg=f"[id='{row}'] td[data-col='{column}'] button.copy-run",
    )
    text = page.evaluate("navigator.clipboard.readText()")
    assert cell.locator("pre.code").inner_text().strip() in text  # the code shown, as shown
    assert own_check and not [line for line in own_check if line in text.splitlines()], "the hidden check was copied"
    assert re.search(r"^#   \S+: \d{4}-\d\d-\d\d on \S.*python 3\.", text, re.M), text[:600]  # versions, device
    name = lane.replace("@", "_")
    script = tmp_path / f"copied_{name.replace('-', '_')}.py"  # not torch.py: it would shadow torch
    script.write_text(text, encoding="utf-8")
    workdir = tmp_path / name
    workdir.mkdir()
    if lane == "torch-dist":
        # As the script's own comment says: torchrun, 2 processes on this CPU (gloo).
        assert "torchrun --standalone --nproc-per-node 2 this_file.py" in text
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", str(script)]
    else:
        command = [sys.executable, str(script)]
    # run twice in a row (a script that writes a file must not find the first run's), and it prints what it computed
    for _ in range(2):
        env = _clean_env(lane) | ({"TMPDIR": str(temp_dir)} if temp_dir else {})
        proc = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True, timeout=400, start_new_session=True)
        assert proc.returncode == 0, f"{lane} {row}/{column}:\n{text}\n--- stderr:\n{proc.stderr[-3000:]}"
    assert "# what it computed" in text and re.search(r"^.+ = ", proc.stdout, re.M), proc.stdout[-2000:]
    return text, proc


def test_copy_runnable_in_the_python_lane_runs(open_page, tmp_path):
    """No sheet has a plain-Python cell, so this builds one: verified for real, rendered, served."""
    from generator.render import html as render
    from generator.render import sitefiles
    from generator.verify.cache import Cache
    from generator.verify.verification import verify
    from tests.browser.conftest import serve
    from tests.conftest import section, write_content

    setup = "import statistics\ndata = [1, 2, 3, 4]"
    code = "m = statistics.mean(data)\nprint(m)"
    row = (
        "  - id: mean\n    title: Mean\n    cells:\n      pytorch:\n        lanes: [python]\n"
        + "        setup: |\n" + "".join(f"          {line}\n" for line in setup.splitlines())
        + "        code: |\n" + "".join(f"          {line}\n" for line in code.splitlines())
        + "        check: |\n          assert m == 2.5\n      jax: {text: fact}\n"
    )
    sheets = content.load(write_content(tmp_path / "content", {"s.yaml": section(row)}))
    verification = verify(sheets, cache=Cache(str(tmp_path / "cache")), cores=1, show_progress=False)
    assert verification.failures() == []
    site = tmp_path / "site"
    sitefiles.publish(render.render_site(sheets, verification), str(site))
    with serve(site) as base:
        page, watch = open_page(base + "t.html")
        page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base.rstrip("/"))
        text, proc = _copy_and_run(page, "mean", "pytorch", "python", ["assert m == 2.5"], tmp_path)
        assert proc.stdout == "2.5\nm = 2.5\n"  # what the code prints, then what it computed
        assert "# setup (hidden on the page)\nimport statistics" in text
        watch.assert_clean()


def _clean_env(lane: str) -> dict:
    env = {"PATH": os.path.dirname(sys.executable) + os.pathsep + "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp")}
    if lane.startswith("keras@"):
        env["KERAS_BACKEND"] = lane.split("@")[1]  # the script's own default is the first backend
    return env


def test_copy_runnable_for_one_cell_per_lane_runs(open_page, real, tmp_path):
    cells = _one_cell_per_lane()
    assert set(LANES) <= set(cells), set(LANES) - set(cells)
    results = {}
    pages = {}
    for lane in LANES:
        sheet, row, column, check = cells[lane]
        if sheet not in pages:
            page, watch = open_page(real + f"{sheet}.html")
            page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=real.rstrip("/"))
            pages[sheet] = (page, watch)
        page, watch = pages[sheet]
        _, proc = _copy_and_run(page, row, column, lane, check, tmp_path)
        results[lane] = {"row": f"{sheet}/{row}/{column}", "exit": proc.returncode}
    _record("copy_runnable", results)
    for _page, watch in pages.values():
        watch.assert_clean()


def _the_cell(sheet_id: str, row_id: str, column: str) -> tuple[str, list[str]]:
    """(the row's own page, the check's own lines) of one code cell of the content."""
    sheet = next(s for s in content.load(os.path.join(ROOT, "content")) if s.id == sheet_id)
    row = next(r for r in sheet.rows() if r.id == row_id)
    cell = next(c for c in row.cells if c.column == column)
    assert cell.kind == CODE
    shown = (cell.code.text + "\n" + (cell.setup.text if cell.setup else "")).splitlines()
    own = [line for line in (cell.check.text if cell.check else "").splitlines() if line.strip() and line not in shown]
    return sheet.page_of()[row.id].removesuffix(".html"), own


# Cells that write files in their working directory: the failing one, Orbax's
# StandardCheckpointer saving to ckpt/state (which refuses a destination that exists), and
# torch.save to model.pt (the check writes other.pt too).
FILE_WRITERS = [("pytorch-jax", "checkpoint", "nnx", "jax", "ckpt/state"), ("pytorch-jax", "checkpoint", "pytorch", "torch", "model.pt")]


def test_copy_runnable_of_a_cell_that_writes_files_runs_twice(open_page, real, tmp_path):
    """The issue's case: the checkpoint script failed on its second run ("Destination already
    exists"). Copied from the page and run twice in the same directory, each script exits 0 both
    times, says nothing about a destination that exists, and wrote its files: into a scratch
    directory of each run's own (two of them, each holding the files), none into the directory it
    was run from."""
    found = {}
    for sheet_id, row, column, lane, written in FILE_WRITERS:
        name, own = _the_cell(sheet_id, row, column)
        page, watch = open_page(real + f"{name}.html")
        page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=real.rstrip("/"))
        temp_dir = tmp_path / f"tmp-{column}"
        temp_dir.mkdir()
        text, proc = _copy_and_run(page, row, column, lane, own, tmp_path, temp_dir=temp_dir)
        assert "already exists" not in proc.stderr + proc.stdout, proc.stderr[-2000:]
        scratch = sorted(temp_dir.glob("hpg-*"))
        assert len(scratch) == 2 and all((d / written).exists() for d in scratch), [sorted(p.relative_to(temp_dir).as_posix() for p in d.rglob("*"))[:20] for d in scratch]
        ran_in = tmp_path / lane.replace("@", "_")
        assert list(ran_in.iterdir()) == [], list(ran_in.iterdir())
        found[f"{name}/{row}/{column}"] = {"exit": proc.returncode, "written": written}
        watch.assert_clean()
        page.context.close()
    _record("copy_runnable_writes_files", found)


# ---------------------------------------------------------------------------------------------
# the offline zip


def test_offline_zip_opens_from_disk_and_its_links_work(open_page, real, real_dir, tmp_path):
    archive = real_dir / reader.OFFLINE_ZIP
    with zipfile.ZipFile(archive) as handle:
        names = handle.namelist()
        handle.extractall(tmp_path)
    root = tmp_path / "ml-hyperpolyglot"
    site_files = sorted(p.relative_to(real_dir).as_posix() for p in real_dir.rglob("*") if p.is_file())
    assert sorted(n.removeprefix("ml-hyperpolyglot/") for n in names) == [f for f in site_files if f != reader.OFFLINE_ZIP]

    # Every link of every page resolves inside the unzipped folder (anchors included).
    parsed = {}
    for path in root.rglob("*.html"):
        parser = _Links()
        parser.feed(path.read_text(encoding="utf-8"))
        parsed[path.relative_to(root).as_posix()] = parser
    broken = []
    for name, parser in parsed.items():
        for _tag, link in parser.links:
            parts = urlsplit(link)
            if parts.scheme in ("http", "https", "mailto"):
                continue
            target = os.path.normpath(os.path.join(os.path.dirname(name), unquote(parts.path))) if parts.path else name
            if not (root / target).is_file():
                broken.append(f"{name}: {link}")
            elif parts.fragment and target.endswith(".html") and unquote(parts.fragment) not in parsed[target].ids:
                broken.append(f"{name}: {link} (no anchor)")
    assert broken == []
    assert "offline copy" in (root / "offline.html").read_text(encoding="utf-8")

    # In a browser, from file://: styled, scripted, and its links lead where they say.
    url = (root / "index.html").as_uri()
    page, _ = open_page(url, base=root.as_uri() + "/")
    assert page.evaluate("getComputedStyle(document.querySelector('.site-header')).display") == "flex"
    assert page.locator(".theme-toggle").is_visible()  # site.js ran
    # A click returns once the next page is committed, not loaded: wait for its load before
    # counting what it holds (counting at once read an empty document in one CI run).
    first_sheet = page.locator("table.index a.sheet-link").first.get_attribute("href")
    page.click("table.index a.sheet-link >> nth=0")
    page.wait_for_url(root.as_uri() + "/" + first_sheet)
    assert page.locator("tr.row").count() > 0
    page.click("a[href='offline.html']")
    page.wait_for_url(root.as_uri() + "/offline.html")
    assert page.locator("h1").inner_text() == "Read it offline"
    page.click("a[href='index.html'] >> nth=-1")
    page.wait_for_url(root.as_uri() + "/index.html")
    # Search works from disk too (its index is a script file).
    page.focus("#site-search")
    page.keyboard.type("GradScaler")
    page.wait_for_selector("#site-search-results li a")
    page.locator("#site-search-results li a").first.click()
    page.wait_for_url(re.compile(r"training(-[a-z]+)?\.html#"))
    assert page.locator(":target").count() == 1
    _record("offline_zip_bytes", archive.stat().st_size)


def test_every_page_says_it_can_be_read_offline(sample_dir):
    for page in sample_dir.glob("*.html"):
        assert '<a href="offline.html">Read it offline</a>' in page.read_text(encoding="utf-8"), page.name
    assert f'href="{reader.OFFLINE_ZIP}"' in (sample_dir / "offline.html").read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# the index says when and on what each sheet was verified


def test_index_says_when_and_on_what_each_sheet_was_last_verified(open_page, sample):
    page, watch = open_page(sample + "index.html")
    cell = page.locator("table.index tbody tr td.verified")
    assert cell.locator("a").inner_text() == "2026-01-02"
    assert cell.locator("a").get_attribute("href") == "verification.html"
    assert "CPU: cpu: Test CPU (2 cores)" in cell.inner_text()
    assert "GPU: none yet" in cell.inner_text()
    watch.assert_clean()


# ---------------------------------------------------------------------------------------------
# axe on the new views, page weight


def test_new_views_have_no_axe_violations(open_page, real):
    found = {}
    for scheme in ("light", "dark"):
        page, watch = open_page(real + "frameworks.html?compare=pytorch,jax&diff=1", color_scheme=scheme)
        page.wait_for_selector(".compare[data-ready=yes]")
        found[f"compare ({scheme})"] = _axe(page)
        page.focus("#site-search")
        page.keyboard.type("vmap")
        page.wait_for_selector("#site-search-results li a")
        found[f"search results ({scheme})"] = _axe(page, runOnly=["wcag2a", "wcag2aa", "best-practice"])
        watch.assert_clean()
    bad = {k: v for k, v in found.items() if v}
    assert bad == {}, json.dumps(bad, indent=1)


def test_largest_sheet_with_what_it_loads_stays_small_and_the_index_waits(open_page, real, real_dir):
    """The sheet page with the most bytes, with every request it makes until the network is idle
    (the lazy files must not be among them): under 350 KB raw and 70 KB gzipped (issue 17). What a
    reader opens (a badge's runs, "Not this") loads then, from data/<sheet>.*.js."""
    name = max((p.name for p in real_dir.glob("*.html") if 'id="sheet"' in p.read_text(encoding="utf-8")), key=lambda n: (real_dir / n).stat().st_size)
    page, _ = open_page(real + name, wait_until="networkidle")
    loaded = page.evaluate("() => [location.href, ...performance.getEntriesByType('resource').map(e => e.name)]")
    paths = sorted({unquote(urlsplit(u).path).lstrip("/") for u in loaded})
    assert not [p for p in paths if any(lazy in p for lazy in LAZY)], paths
    files = [(real_dir / p).read_bytes() for p in paths]
    raw, packed = sum(map(len, files)), sum(len(gzip.compress(f, 9)) for f in files)
    _record("largest_sheet", {"page": name, "files": paths, "bytes": raw, "gzip_bytes": packed})
    assert raw < 350_000 and packed < 70_000, (name, raw, packed)


def test_badge_runs_load_on_opening_from_disk_too(open_page, real_dir):
    """A passed cell's runs are not in the page: opening its badge loads data/<sheet>.runs.js, a
    script file, so it works from file:// (the offline copy) as over http."""
    url = (real_dir / "training.html").as_uri()
    page, watch = open_page(url, base=real_dir.as_uri() + "/")
    badge = page.locator("details.badge[data-lazy=runs]").first
    assert badge.locator("dl").count() == 0 and badge.locator("summary").inner_text().startswith("✓ verified")
    badge.locator("summary").click()
    badge.locator("dl.runs dt").first.wait_for()
    text = badge.locator("dl.runs").inner_text()
    assert "passed" in text and "Python 3." in text and "cpu: " in text, text
    assert badge.get_attribute("data-loaded") == "yes"
    badge.locator("summary").click()  # closed and opened again: loaded once
    badge.locator("summary").click()
    assert badge.locator("dl.runs").count() == 1
    watch.assert_clean()


def test_not_this_loads_the_wrong_snippets_on_opening(open_page, real):
    """The counterexamples are not in the page (they would double it): opening "Not this" loads
    them from data/<sheet>.not-this.js and shows the code with why it is wrong."""
    page, _ = open_page(real + "frameworks.html")
    page.wait_for_load_state("networkidle")
    details = page.locator("details.not-this").first
    assert details.locator(".counterexample").count() == 0
    details.locator("summary").click()
    details.locator(".counterexample pre.code").first.wait_for()
    assert details.locator(".counterexample .why").first.inner_text().strip()
    assert "✓" in details.locator(".rejection").first.inner_text()
