"""`verify --changed-since REF`: the rows whose cells differ from a git ref."""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
import tempfile

from generator.errors import ContentInvalid
from generator.load import content


def _signature(row) -> tuple:
    return tuple(
        (c.column, c.kind, c.code and c.code.text, c.setup and c.setup.text, c.check and c.check.text, c.lanes, c.text, c.reason)
        for c in row.cells
    ) + ((row.timeout,),)


def changed_rows(content_dir: str, ref: str) -> set[str]:
    """'sheet/row' ids of rows that are new or whose cells changed since `ref`."""
    repo = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=content_dir, capture_output=True, text=True, check=True).stdout.strip()
    relative = os.path.relpath(os.path.abspath(content_dir), repo)
    archive = subprocess.run(["git", "archive", "--format=tar", ref, "--", relative], cwd=repo, capture_output=True)
    now = {f"{s.id}/{r.id}": _signature(r) for s in content.load(content_dir) for r in s.rows()}
    if archive.returncode != 0:
        if b"did not match any files" in archive.stderr or b"pathspec" in archive.stderr:
            return set(now)  # no content at that ref: everything is new
        raise RuntimeError(f"git archive {ref} failed: {archive.stderr.decode().strip()}")
    with tempfile.TemporaryDirectory() as old_root:
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(old_root, filter="data")
        try:
            before = {f"{s.id}/{r.id}": _signature(r) for s in content.load(os.path.join(old_root, relative)) for r in s.rows()}
        except ContentInvalid:
            return set(now)  # the old content did not load: treat every row as changed
    return {row for row, signature in now.items() if before.get(row) != signature}
