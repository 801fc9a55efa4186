"""The worker's messages and files: JSON lines to the runner, JSON files between a cell process and
the worker."""

from __future__ import annotations

import json
import os


def send(stream, message: dict) -> None:
    stream.write(json.dumps(message) + "\n")
    stream.flush()


def write_json(path: str, data: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(data, handle)
    os.replace(tmp, path)


def read_result(path: str):
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None
