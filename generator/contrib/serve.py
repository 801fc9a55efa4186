"""`serve`: serve the site on localhost and rebuild when content or templates change.

A rebuild re-runs only the cells whose code changed (the rest come from the cache) and keeps
going on failures, so the page shows them.
"""

from __future__ import annotations

import functools
import http.server
import os
import sys
import threading
import time

from generator import build as build_stage
from generator.errors import ContentInvalid

WATCHED = ("content", "templates", "snippets")


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


def _rebuild(options) -> None:
    started = time.perf_counter()
    try:
        outcome = build_stage.build(options)
    except ContentInvalid as invalid:
        print(invalid.report(), file=sys.stderr)
        return
    failed = len(outcome.failures)
    print(f"rebuilt in {time.perf_counter() - started:.1f} s; {failed} failing cell(s)", file=sys.stderr)


def serve(options, host: str = "127.0.0.1", port: int = 8000, interval: float = 1.0) -> None:
    options.keep_going = True
    _rebuild(options)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=os.path.abspath(options.out_dir))
    server = http.server.ThreadingHTTPServer((host, port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"serving {options.out_dir}/ on http://{host}:{server.server_port}/ (Ctrl-C stops)", file=sys.stderr)
    roots = [options.content_dir] + [root for root in WATCHED[1:] if os.path.isdir(root)]
    seen = _snapshot(roots)
    try:
        while True:
            time.sleep(interval)
            now = _snapshot(roots)
            if now != seen:
                seen = now
                print("change seen: rebuilding", file=sys.stderr)
                _rebuild(options)
    finally:
        server.shutdown()
