"""`serve`: build into a folder of its own, serve it on localhost, rebuild when content or templates change.

It never writes `site/` (the published build's folder): its site goes to `.cache/serve/` unless `--out`
names another. A rebuild re-runs only the cells whose code changed (the rest come from the cache) and keeps
going on failures, so the page shows them. When the content cannot be built at all (invalid YAML, a rule
broken), every page it serves is the list of errors, with file:line; every page served reloads itself when a
rebuild finishes, so a fix shows in the browser without touching it. With `--only ROW` it verifies that row
and renders only the sheets that hold it (a preview: no guide, trade-off or benchmarks page).
"""

from __future__ import annotations

import functools
import html
import http.server
import os
import sys
import threading
import time
from dataclasses import dataclass, field

from generator import build as build_stage
from generator.errors import ContentInvalid, UnknownRow

WATCHED = ("content", "templates", "snippets")
RELOAD_PATH = "/__serve/reload.js"
STATE_PATH = "/__serve/state"
# every page served asks for the build's number every second and reloads when it changes
RELOAD_JS = b"""(function () {
  var seen = null;
  function poll() {
    fetch("/__serve/state", {cache: "no-store"}).then(function (r) { return r.text(); }).then(function (n) {
      if (seen !== null && n !== seen) { location.reload(); }
      seen = n;
    }).catch(function () {}).finally(function () { setTimeout(poll, 1000); });
  }
  poll();
})();
"""


@dataclass
class State:
    """What the server shows: the number of the last rebuild, and its errors when it could not build."""

    generation: int = 0
    errors: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def finished(self, errors: str) -> None:
        with self.lock:
            self.generation += 1
            self.errors = errors


def _snapshot(roots) -> dict[str, float]:
    stamps = {}
    for root in roots:
        for folder, _, files in os.walk(root):
            for name in files:
                path = os.path.join(folder, name)
                try:
                    stamps[path] = os.stat(path).st_mtime
                except OSError:
                    pass
    return stamps


def error_page(errors: str) -> bytes:
    """The page served while the content cannot be built: its errors, as the terminal shows them."""
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>Build failed</title>"
        "<style>body{font:15px/1.5 system-ui,sans-serif;margin:2rem;max-width:70rem}pre{background:#fee;padding:1rem;"
        "white-space:pre-wrap;border-left:4px solid #c00}</style></head><body><h1>The content cannot be built</h1>"
        "<p>Fix the errors below and save: this page reloads when the rebuild is done.</p>"
        f"<pre>{html.escape(errors)}</pre><script src=\"{RELOAD_PATH}\"></script></body></html>"
    ).encode()


class Handler(http.server.SimpleHTTPRequestHandler):
    """The site's files, the error page while the content cannot be built, and the reload script in every page."""

    state: State

    def __init__(self, *args, state: State, **kwargs):
        self.state = state
        super().__init__(*args, **kwargs)

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass  # the terminal shows the rebuilds, not every request

    def do_GET(self):  # noqa: N802 - the base class's name
        path = self.path.split("?", 1)[0]
        if path == RELOAD_PATH:
            return self._send(RELOAD_JS, "text/javascript")
        if path == STATE_PATH:
            return self._send(str(self.state.generation).encode(), "text/plain")
        page = path.endswith((".html", "/"))
        if page and self.state.errors:
            return self._send(error_page(self.state.errors), "text/html; charset=utf-8")
        if page:
            local = self.translate_path(path)
            if os.path.isdir(local):
                local = os.path.join(local, "index.html")
            try:
                with open(local, "rb") as handle:
                    body = handle.read()
            except OSError:
                return super().do_GET()
            script = f'<script src="{RELOAD_PATH}"></script></body>'.encode()
            return self._send(body.replace(b"</body>", script, 1), "text/html; charset=utf-8")
        return super().do_GET()

    def _send(self, body: bytes, kind: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)


def rebuild(options, state: State) -> None:
    """One build; its content errors (or a mistyped --only) become the page served, its failures show in the pages."""
    started = time.perf_counter()
    try:
        outcome = build_stage.build(options)
    except ContentInvalid as invalid:
        print(invalid.report(), file=sys.stderr)
        state.finished(invalid.report())
        return
    except UnknownRow as unknown:
        print(f"error: {unknown}", file=sys.stderr)
        state.finished(f"error: {unknown}")
        return
    failed = len(outcome.failures)
    if failed:
        from generator import reports

        print(reports.verification_text(outcome.verification), file=sys.stderr)
    print(f"rebuilt in {time.perf_counter() - started:.1f} s; {failed} failing cell(s), shown in the pages", file=sys.stderr)
    state.finished("")


def serve(options, host: str = "127.0.0.1", port: int = 8000, interval: float = 1.0, ready=None, stop: threading.Event | None = None) -> None:
    """Build, serve, rebuild on change until interrupted (or `stop` is set). `ready(url, state)` is called once
    the first build is served."""
    options.keep_going = True
    options.preview = options.only is not None
    os.makedirs(options.out_dir, exist_ok=True)
    state = State()
    handler = functools.partial(Handler, state=state, directory=os.path.abspath(options.out_dir))
    server = http.server.ThreadingHTTPServer((host, port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://{host}:{server.server_port}/"
    rebuild(options, state)
    print(f"serving {options.out_dir}/ on {url} (Ctrl-C stops)", file=sys.stderr)
    if ready is not None:
        ready(url, state)
    roots = [options.content_dir] + [root for root in WATCHED[1:] if os.path.isdir(root)]
    seen = _snapshot(roots)
    try:
        while stop is None or not stop.is_set():
            time.sleep(interval)
            now = _snapshot(roots)
            if now != seen:
                seen = now
                print("change seen: rebuilding", file=sys.stderr)
                rebuild(options, state)
    finally:
        server.shutdown()
