"""What is installed: a package's version, a lane's packages' versions, and everything they depend on.
Read from package metadata: no framework is imported."""

from __future__ import annotations

import platform
import re
from functools import cache
from importlib import metadata

from generator.lanes import Lane


@cache
def package_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def lane_versions(lane: Lane) -> dict[str, str]:
    """The versions of the lane's packages, read from metadata (no framework is imported)."""
    versions = {"python": platform.python_version()}
    for name in lane.packages:
        versions[name] = package_version(name)
    return versions


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@cache
def lane_distributions(packages: tuple[str, ...]) -> dict[str, str]:
    """The installed distributions a lane's packages need, transitively, by name: their versions.
    Dependencies that apply here only (environment markers evaluated, no extras)."""
    found: dict[str, str] = {}
    todo = list(packages)
    while todo:
        name = _canonical(todo.pop())
        if name not in found:
            found[name], requires, unreadable = _distribution(name)
            todo.extend(requires)
            for text in unreadable:  # kept in the key as written: a dependency never drops out of it
                found[f"{name} requires {text!r}"] = "unreadable"
    return dict(sorted(found.items()))


def distribution_problems(packages: tuple[str, ...]) -> list[str]:
    """What could not be read into the key of a lane with these packages (for the build's warnings)."""
    return [f"{key.split(' requires ')[0]} declares a requirement that cannot be parsed ({key.split(' requires ', 1)[1]}): "
            "it is in the cache key as written, and what it names is not followed"
            for key, version in lane_distributions(packages).items() if version == "unreadable"]  # fmt: skip


@cache
def _distribution(name: str) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """An installed distribution's version, the names it requires here and the requirements it
    declares that cannot be parsed: read once per process (lanes share most of theirs; parsing each
    one's metadata per lane took 0.5 s of every build)."""
    try:
        from packaging.requirements import InvalidRequirement, Requirement
    except ImportError:  # pragma: no cover - packaging comes with the lock (a dependency of keras)
        Requirement = InvalidRequirement = None
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return "not installed", (), ()
    requires, unreadable = [], []
    for text in dist.requires or ():
        if Requirement is None:
            if "extra ==" not in text:
                requires.append(re.split(r"[\s;<>=!~\[(]", text, maxsplit=1)[0])
            continue
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            unreadable.append(text)
            continue
        if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
            requires.append(requirement.name)
    return dist.version, tuple(requires), tuple(unreadable)
