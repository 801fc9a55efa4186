"""Defence in depth for the build: the files it reads after cells have run must be the ones it started with.

The sandbox (verify/sandbox.py) keeps cells from writing into the checkout. Where it cannot be had (no
bubblewrap, `--sandbox off`), a cell could still rewrite a template, the generator's own code or a GPU
ledger between the moment the build starts and the moment it renders,
and so reach the published site. The build therefore takes a digest of every such file before any
cell runs and, after verification, refuses to render when one changed, was added or went away,
naming each: nothing written, the last good site left in place.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Tampered(RuntimeError):
    """Files the build reads after verification changed while cells ran: the site is not rendered."""

    def __init__(self, changed: list[str]):
        self.changed = changed
        shown = ", ".join(changed[:10]) + (f" and {len(changed) - 10} more" if len(changed) > 10 else "")
        super().__init__(
            f"{len(changed)} file(s) the build reads after verification changed while cells ran: {shown}. "
            "Either a cell wrote outside its scratch folder (run with the sandbox: docs/sandbox.md) or they were "
            "edited during the build; the site was not rendered and the last good site is left in place"
        )


def watched(content_dir: str) -> tuple[str, ...]:
    """What the build reads after cells run: the templates and static files, the generator's code
    (modules imported late included) and the committed runs merged after verification (GPU ledgers,
    older releases, mutants). The content itself and the cache of highlighted code are read before any cell
    runs; the results cache is the runner's (concurrent builds write it, so it cannot be watched)."""
    return (
        os.path.join(ROOT, "templates"),
        os.path.join(ROOT, "generator"),
        os.path.join(content_dir, "ledger"),
        os.path.join(content_dir, "versions"),
        os.path.join(content_dir, "mutants"),
    )


@dataclass(frozen=True)
class Snapshot:
    """The sha256 of every file under some paths (a file or a folder, walked; a missing path holds none)."""

    paths: tuple
    digests: dict  # file path -> sha256

    @classmethod
    def take(cls, paths) -> Snapshot:
        return cls(tuple(paths), _digests(paths))

    def changed(self) -> list[str]:
        """The files under the snapshot's paths that differ now: changed, added or removed."""
        now = _digests(self.paths)
        return sorted(path for path in self.digests.keys() | now.keys() if self.digests.get(path) != now.get(path))


def _digests(paths) -> dict:
    digests = {}
    for top in paths:
        if os.path.isfile(top):
            digests[top] = _file_digest(top)
            continue
        for folder, dirs, files in os.walk(top):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if not name.endswith((".pyc", ".pyo")):
                    path = os.path.join(folder, name)
                    digests[path] = _file_digest(path)
    return digests


def _file_digest(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except OSError as exc:  # unreadable now: not what it was
        return f"unreadable: {exc.strerror}"
