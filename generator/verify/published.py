"""CI's verification results, published with the site so that a fresh clone starts warm.

`cache export FILE` (the pages workflow, after its build) writes every passed result of the content's
jobs to one gzipped JSON file, which is published beside the site. `cache import [SOURCE]` (`make
cache-get`) reads such a file, from a path or a URL (default: the GitHub Pages site of the clone's
`origin`), and stores in the local cache only the results whose cache key is a key of this checkout's
jobs: the key holds the cell, its lane, the worker's code, Python and every package version, so a result
is used only where it would have been computed the same way here. Anything else in the file is left out
and counted. First stored wins, as for builds running at once.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys

from generator.model import PASSED, Result

FORMAT = 1
NAME = "results-cache.json.gz"


class PublishedError(Exception):
    """The published results could not be read."""


def export(cache, jobs, path: str) -> int:
    """Write the cache's passed results of `jobs` to `path`; return how many."""
    results = {}
    for job in jobs:
        result = cache.get(job.key)
        if result is not None:
            results[job.key] = result.to_json()
    data = json.dumps({"format": FORMAT, "python": sys.version, "results": results}, sort_keys=True).encode()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as handle:
        handle.write(gzip.compress(data, compresslevel=9, mtime=0))
    os.replace(tmp, path)
    return len(results)


def origin_url(repo_dir: str = ".") -> str:
    """The published results' URL on the GitHub Pages site of the clone's `origin`."""
    try:
        remote = subprocess.run(["git", "remote", "get-url", "origin"], cwd=repo_dir, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as error:
        raise PublishedError(f"no git remote 'origin' to find the published site from ({error}): name the file or URL") from None
    match = re.search(r"github\.com[:/]([^/]+)/([^/]+?)(?:\.git)?$", remote)
    if not match:
        raise PublishedError(f"origin ({remote}) is not a GitHub repository: name the file or URL")
    owner, repo = match.groups()
    return f"https://{owner.lower()}.github.io/{repo}/{NAME}"


def _read(source: str) -> dict:
    try:
        if re.match(r"https?://", source):
            import urllib.request

            with urllib.request.urlopen(source, timeout=60) as response:  # noqa: S310 - an http(s) URL, checked above
                raw = response.read()
        else:
            with open(source, "rb") as handle:
                raw = handle.read()
        data = json.loads(gzip.decompress(raw))
    except (OSError, ValueError, EOFError) as error:
        raise PublishedError(f"{source} could not be read: {error}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("results"), dict):
        raise PublishedError(f"{source} is not a results file of format {FORMAT}")
    return data


def import_results(cache, jobs, source: str) -> tuple[int, int, int, str]:
    """Store the results of `source` whose keys are keys of `jobs`: (stored, already here, left out, and
    why none could match when the interpreter that made them is not this one)."""
    wanted = {job.key for job in jobs}
    stored = present = left = 0
    published = _read(source)
    python = str(published.get("python", ""))
    why = "" if python in ("", sys.version) else (f"the results were made by Python {python}, this is {sys.version}: a cache key holds "
                                                 "the interpreter's build, so none of them can be used here")  # fmt: skip
    for key, data in published["results"].items():
        if key not in wanted:
            left += 1
            continue
        if cache.get(key) is not None:
            present += 1
            continue
        try:
            result = Result.from_json(data)
        except (KeyError, ValueError, TypeError):
            left += 1
            continue
        if result.status != PASSED:
            left += 1
            continue
        cache.put(key, result)
        stored += 1
    return stored, present, left, why
