"""`verify --changed-since REF`: the rows whose cells differ from a git ref."""

from __future__ import annotations

import io
import json
import os
import subprocess
import tarfile
import tempfile

import yaml

from generator.errors import ContentInvalid
from generator.load import content


def _signature(row) -> tuple:
    return tuple(
        (c.column, c.kind, c.code and c.code.text, c.setup and c.setup.text, c.check and c.check.text, c.lanes, c.text, c.reason)
        for c in row.cells
    ) + ((row.timeout,),)


def _raw_signatures(content_dir: str) -> dict[str, str]:
    """'sheet/row' -> the row's cells and timeout as parsed YAML, validated by nothing: what is compared
    when one side does not load under today's rules (a rule added since `ref` rejects the old content)."""
    out: dict[str, str] = {}
    for entry in sorted(os.listdir(content_dir)):
        sheet_file = os.path.join(content_dir, entry, "sheet.yaml")
        if not os.path.isfile(sheet_file):
            continue
        try:
            with open(sheet_file, encoding="utf-8") as handle:
                sheet = yaml.safe_load(handle) or {}
            for name in sheet.get("sections") or ():
                with open(os.path.join(content_dir, entry, str(name)), encoding="utf-8") as handle:
                    section = yaml.safe_load(handle) or {}
                for row in section.get("rows") or ():
                    if isinstance(row, dict) and "id" in row:
                        key = f"{sheet.get('id', entry)}/{row['id']}"
                        out[key] = json.dumps([row.get("cells"), row.get("timeout")], sort_keys=True, default=str)
        except (OSError, yaml.YAMLError, AttributeError, TypeError):
            continue  # a sheet that cannot be read at all: its rows count as new
    return out


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
            # the old content breaks a rule added since: compare the rows as written, not as loaded
            old, new = _raw_signatures(os.path.join(old_root, relative)), _raw_signatures(content_dir)
            return {row for row in now if row not in old or old[row] != new.get(row)}
    return {row for row, signature in now.items() if before.get(row) != signature}
