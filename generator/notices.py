"""The build's warnings channel: what it went on without, said once in the summary and counted.

A write that failed (a full disk caches nothing), a cache entry that could not be read (so the job
runs again), a dependency that could not be read into a cache key: none of these stops a build,
and none may pass in silence. The stage that meets one adds it here; the command line prints them
all after the summary, with their count, and `--strict` (and CI) makes any of them a failure, as
mkdocs' `--strict` does.
"""

from __future__ import annotations


class Warnings:
    """The warnings of one build, in the order they came, each said once."""

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}

    def add(self, message: str) -> None:
        self._seen[message] = self._seen.get(message, 0) + 1

    def __len__(self) -> int:
        return len(self._seen)

    def __iter__(self):
        return iter(self._seen)

    def lines(self) -> list[str]:
        """'warning: …' for each, with how often it came when more than once, then the count."""
        if not self._seen:
            return []
        out = [f"warning: {message}" + (f" (x{count})" if count > 1 else "") for message, count in self._seen.items()]
        return out + [f"{len(self._seen)} warning(s): the build went on without what they name (--strict makes them failures)"]
