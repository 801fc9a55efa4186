"""Writing files so that no reader ever sees half of one: every file the generator writes goes here.

A file is written to a temporary name of its own beside the target (unique per writer, so
concurrent builds never share one) and renamed over it; a crash leaves the old file or the new
one, never a mix. `write_temp` is the first half, for callers that finish differently (the result
cache links the file into place so that the first writer wins).
"""

from __future__ import annotations

import json
import os
import secrets


def write_temp(path: str | os.PathLike, data: bytes | str) -> str:
    """Write `data` to a new temporary file in `path`'s folder (made if missing); return its name."""
    folder = os.path.dirname(os.fspath(path)) or "."
    os.makedirs(folder, exist_ok=True)
    while True:  # mkstemp's name, but the mode the umask gives (mkstemp's files are owner-only)
        tmp = os.path.join(folder, f".{os.path.basename(os.fspath(path))}.{secrets.token_hex(6)}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            break
        except FileExistsError:
            continue
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data.encode("utf-8") if isinstance(data, str) else data)
    except BaseException:
        discard(tmp)
        raise
    return tmp


def atomic_write(path: str | os.PathLike, data: bytes | str) -> None:
    """Replace `path` with `data` in one step."""
    tmp = write_temp(path, data)
    try:
        os.replace(tmp, path)
    except BaseException:
        discard(tmp)
        raise


def write_json(path: str | os.PathLike, data, **dumps) -> None:
    """`atomic_write` of `json.dumps(data, **dumps)`."""
    atomic_write(path, json.dumps(data, **dumps))


def discard(path: str) -> None:
    """Remove a file if it is there."""
    try:
        os.unlink(path)
    except OSError:
        pass
