"""Writing the site: into a temporary directory first, swapped in only when complete.

The swap holds a lock, so two builds running at once never interleave their files, and an
interrupted build leaves the last good site where it was.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import shutil
import tempfile
from contextlib import contextmanager

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def publish(files: dict[str, bytes], out_dir: str) -> None:
    """Write `files` to a fresh directory beside out_dir, then swap it in atomically."""
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
            _swap(staging, out_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


@contextmanager
def _lock(out_dir: str):
    lock_path = os.path.join(os.path.dirname(out_dir), f".{os.path.basename(out_dir)}.lock")
    with open(lock_path, "w") as handle:
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
