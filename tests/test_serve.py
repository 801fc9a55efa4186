"""`serve` builds into a folder of its own (never site/), shows a content error in the page it serves, and
every page reloads itself when a rebuild is done; `build --only ROW --preview` (make preview) renders only
the row's sheet; `cache export`/`cache import` carry CI's results to a fresh clone, only where keys match."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
import urllib.request

from generator import build as build_stage
from generator.contrib import serve
from tests.conftest import ROOT, code_row, section, write_content


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.read().decode()


def _wait(state, generation: int, seconds: float = 240) -> None:
    deadline = time.monotonic() + seconds
    while state.generation <= generation:
        assert time.monotonic() < deadline, "no rebuild"
        time.sleep(0.1)


def test_serve_writes_its_own_folder_shows_errors_in_the_page_and_reloads(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # site/ would be written here
    root = write_content(tmp_path / "content", {"s.yaml": section(code_row("r", "y = 1", "assert y == 1"))})
    options = build_stage.Options(content_dir=root, out_dir=str(tmp_path / ".cache" / "serve"), cache_dir=str(tmp_path / ".cache"), cores=2,
                                  show_progress=False, benchmarks=False)  # fmt: skip
    served, stop = {}, threading.Event()
    thread = threading.Thread(target=serve.serve, args=(options,), kwargs={"port": 0, "interval": 0.2, "stop": stop,
                                                                         "ready": lambda url, state: served.update(url=url, state=state)}, daemon=True)  # fmt: skip
    thread.start()
    try:
        deadline = time.monotonic() + 240
        while "url" not in served:
            assert time.monotonic() < deadline and thread.is_alive(), "serve did not start"
            time.sleep(0.1)
        url, state = served["url"], served["state"]
        page = _get(url + "index.html")
        assert f'<script src="{serve.RELOAD_PATH}"></script></body>' in page  # every page reloads after a rebuild
        assert "serve" in os.listdir(tmp_path / ".cache") and not os.path.exists(tmp_path / "site")
        generation = state.generation
        path = os.path.join(root, "t", "s.yaml")
        with open(path, encoding="utf-8") as handle:
            good = handle.read()
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(good.replace("        code: |\n          y = 1", "        code: |\n          y = 1\n        z = 2"))
        _wait(state, generation)
        page = _get(url + "t.html")
        assert "The content cannot be built" in page and f"{path}:11: invalid YAML: indentation: line 11" in page
        assert _get(url + serve.STATE_PATH.lstrip("/")) == str(state.generation)
        generation = state.generation
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(good)
        _wait(state, generation)
        assert "The content cannot be built" not in _get(url + "index.html")
        assert not os.path.exists(tmp_path / "site")
    finally:
        stop.set()
        thread.join(30)


def _cli(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "generator", *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=300)


ROWS = section(code_row("a", "y = 1", "assert y == 1"), section_id="s")
OTHER = section(code_row("b", "y = 2", "assert y == 2"), section_id="o")


def test_preview_renders_only_the_rows_sheet_and_names_a_wrong_row(tmp_path):
    # the row names a row of the sheet the preview leaves out (see_also): no link, and no crash (a KeyError did)
    linked = re.sub(r"(\n    title: [^\n]*\n)", r"\1    see_also: [two/b]\n", ROWS, count=1)
    assert "see_also: [two/b]" in linked
    root = write_content(tmp_path / "content", {"s.yaml": linked}, sheet_id="one")
    write_content(tmp_path / "content", {"o.yaml": OTHER}, sheet_id="two")
    proc = _cli("build", "--content", root, "--cache", tmp_path / "cache", "--out", tmp_path / "preview", "--only", "a", "--preview", "--quiet", "--no-benchmarks")
    assert proc.returncode == 0, proc.stderr
    assert os.path.isfile(tmp_path / "preview" / "one.html") and not os.path.exists(tmp_path / "preview" / "two.html")
    proc = _cli("build", "--content", root, "--cache", tmp_path / "cache", "--out", tmp_path / "preview", "--only", "aa", "--preview", "--quiet")
    assert proc.returncode == 2 and "no row 'aa' in the content (did you mean 'a'" in proc.stderr


def test_published_results_warm_a_fresh_cache_only_where_the_keys_match(tmp_path):
    root = write_content(tmp_path / "content", {"s.yaml": section(code_row("a", "y = 1", "assert y == 1"), code_row("b", "y = 2", "assert y == 2"))})
    assert _cli("verify", "--content", root, "--cache", tmp_path / "ci", "--quiet").returncode == 0
    published = tmp_path / "results-cache.json.gz"
    proc = _cli("cache", "export", published, "--content", root, "--cache", tmp_path / "ci")
    assert proc.returncode == 0 and f"wrote 2 passed result(s) of 2 job(s) to {published}" in proc.stderr, proc.stderr
    # a contributor's clone where row b changed: a's result is taken, b's (another key) is left out and runs
    write_content(tmp_path / "content", {"s.yaml": section(code_row("a", "y = 1", "assert y == 1"), code_row("b", "y = 3", "assert y == 3"))})
    proc = _cli("cache", "import", published, "--content", root, "--cache", tmp_path / "fresh")
    assert proc.returncode == 0 and "stored 1 result(s)" in proc.stderr and "left out 1 whose keys are not this checkout's" in proc.stderr, proc.stderr
    proc = _cli("verify", "--content", root, "--cache", tmp_path / "fresh", "--quiet")
    assert proc.returncode == 0 and "ran 1 cell(s)" in proc.stderr, proc.stderr


def test_the_make_targets_and_the_pages_workflow():
    with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as handle:
        makefile = handle.read()
    assert "$(PY) -m generator build --only $(ROW) --preview --keep-going --out .cache/preview" in makefile
    assert "$(PY) -m generator serve $(if $(ROW),--only $(ROW))" in makefile
    assert "$(PY) -m generator cache import $(CACHE_URL)" in makefile
    with open(os.path.join(ROOT, ".github", "workflows", "pages.yml"), encoding="utf-8") as handle:
        assert "generator cache export site/results-cache.json.gz" in handle.read()


def test_published_results_from_another_interpreter_build_are_said_to_be_unusable(tmp_path):
    import gzip
    import json

    root = write_content(tmp_path / "content", {"s.yaml": section(code_row("a", "y = 1", "assert y == 1"))})
    published = tmp_path / "results-cache.json.gz"
    published.write_bytes(gzip.compress(json.dumps({"format": 1, "python": "3.11.0 (elsewhere)", "results": {}}).encode()))
    proc = _cli("cache", "import", published, "--content", root, "--cache", tmp_path / "fresh")
    assert proc.returncode == 0 and "note: the results were made by Python 3.11.0 (elsewhere), this is " in proc.stderr, proc.stderr
