"""Writing the site: into a temporary directory first, swapped in only when complete.

The swap holds a lock, so two builds running at once never interleave their files, and an
interrupted build leaves the last good site where it was.

Which build's site stays does not depend on which finishes first: each build takes a ticket when
it starts (`ticket`), numbered in start order, and `publish` refuses to replace a site published
by a build that started later. Of builds that overlap, the site is the one that started last.
The tickets live beside the site in `.<site>.state` (JSON), read and written under the lock.
"""

from __future__ import annotations

import ctypes
import fcntl
import json
import os
import shutil
import tempfile
from contextlib import contextmanager

from generator.files import write_json

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def ticket(out_dir: str) -> int:
    """A number for a build that starts now: larger than every ticket handed out for out_dir before."""
    out_dir = os.path.abspath(out_dir)
    os.makedirs(os.path.dirname(out_dir), exist_ok=True)
    with _lock(out_dir):
        state = _read_state(out_dir)
        state["issued"] = max(state["issued"], state["published"]) + 1
        _write_state(out_dir, state)
        return state["issued"]


def publish(files: dict[str, bytes], out_dir: str, ticket: int | None = None) -> bool:
    """Write `files` to a fresh directory beside out_dir, then swap it in atomically.

    With a `ticket` (from `ticket()` when the build started), a site already published by a build
    that started later is left in place and False is returned. Without one, always published.
    """
    out_dir = os.path.abspath(out_dir)
    parent = os.path.dirname(out_dir)
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=f".{os.path.basename(out_dir)}.new-", dir=parent)
    try:
        for relative, data in sorted(files.items()):
            path = os.path.join(staging, relative)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as handle:
                handle.write(data)
        os.chmod(staging, 0o755)
        with _lock(out_dir):
            state = _read_state(out_dir)
            if ticket is not None and state["published"] > ticket and os.path.isdir(out_dir):
                return False
            _swap(staging, out_dir)
            if ticket is not None:
                state["published"] = ticket
                _write_state(out_dir, state)
        return True
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _state_path(out_dir: str) -> str:
    return os.path.join(os.path.dirname(out_dir), f".{os.path.basename(out_dir)}.state")


def _read_state(out_dir: str) -> dict:
    """{"issued": last ticket handed out, "published": ticket of the site in place}; zeros when unreadable."""
    try:
        with open(_state_path(out_dir), encoding="utf-8") as handle:
            data = json.load(handle)
        return {"issued": int(data["issued"]), "published": int(data["published"])}
    except (OSError, ValueError, KeyError, TypeError):
        return {"issued": 0, "published": 0}


def _write_state(out_dir: str, state: dict) -> None:
    write_json(_state_path(out_dir), state)


@contextmanager
def _lock(out_dir: str):
    lock_path = os.path.join(os.path.dirname(out_dir), f".{os.path.basename(out_dir)}.lock")
    with open(lock_path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _swap(staging: str, out_dir: str) -> None:
    """Put staging at out_dir; afterwards staging holds the old site (or nothing)."""
    if not os.path.isdir(out_dir):
        os.rename(staging, out_dir)
        os.makedirs(staging)  # so that the caller's cleanup has something to remove
        return
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is not None:
        result = renameat2(_AT_FDCWD, staging.encode(), _AT_FDCWD, out_dir.encode(), _RENAME_EXCHANGE)
        if result == 0:
            return
    # No atomic exchange here: two renames, with the old site kept until the new one is in place.
    old = staging + ".old"
    os.rename(out_dir, old)
    os.rename(staging, out_dir)
    os.rename(old, staging)
