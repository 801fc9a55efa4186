"""Docs that cannot go stale: every CLI command and option, every schema field, every lane is documented."""

from __future__ import annotations

import os

import pytest

from generator import lanes
from generator.cli import parser
from generator.load import schema
from tests.conftest import ROOT


def _read(*parts) -> str:
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as handle:
        return handle.read()


def _commands():
    sub = next(a for a in parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    return sub.choices


def test_every_cli_command_and_option_is_documented():
    doc = _read("docs", "cli.md")
    missing = []
    for name, command in _commands().items():
        if f"## `{name}" not in doc:
            missing.append(f"command {name}")
        for action in command._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help") and f"`{option}" not in doc:
                    missing.append(f"{name} {option}")
    assert missing == []


def test_readme_names_the_main_commands():
    readme = _read("README.md")
    for name in ("build", "verify", "check"):
        assert f"python -m generator {name}" in readme


def test_schema_tables_are_generated_from_the_spec():
    """docs/schema.md's field tables are what generator/load/schema.py declares (one table per kind)."""
    doc = _read("docs", "schema.md")
    assert schema.document(doc) == doc, "docs/schema.md is stale: run `make docs` (python -m generator.load.schema)"


def test_a_kind_without_its_table_is_an_error():
    with pytest.raises(ValueError, match="has no table for"):
        schema.document("<!-- schema: sheet -->\n<!-- /schema -->\n")
    with pytest.raises(ValueError, match="names no kind"):
        schema.document("<!-- schema: shet -->\n<!-- /schema -->\n")


def test_every_lane_is_documented():
    doc = _read("docs", "schema.md")
    for name in lanes.LANES:
        if ":" not in name:  # device variants (torch:cuda) are made on demand, not content lanes
            assert f"`{name}`" in doc, name


@pytest.mark.content  # real framework code in five lanes: most of two minutes of CPU
def test_contributing_example_row_verifies(tmp_path):
    """The example row in CONTRIBUTING.md is real: it loads and every code cell passes."""
    import yaml

    from generator.load import content
    from generator.verify.cache import Cache
    from generator.verify.verification import verify
    from tests.conftest import write_content

    guide = _read("CONTRIBUTING.md")
    example = guide.split("A filled-in row looks like this:\n\n```yaml\n", 1)[1].split("```", 1)[0]
    assert yaml.safe_load(example)[0]["id"] == "group-norm"
    columns = (("pytorch", "torch"), ("keras", "keras@jax, keras@torch, keras@tensorflow"), ("jax", "jax"), ("tensorflow", "tensorflow"))
    root = write_content(tmp_path / "content", {"s.yaml": "id: s\ntitle: S\nrows:\n" + example}, columns=columns)
    verification = verify(content.load(root), cache=Cache(str(tmp_path / "cache")), cores=2, show_progress=False)
    statuses = {key[2]: v.status for key, v in verification.verdicts.items()}
    assert statuses == {"pytorch": "passed", "keras": "passed", "jax": "passed"}, verification.failures()


def test_evidence_benchmarks_are_documented():
    from generator.load import pages

    doc = _read("docs", "schema.md").split("### Evidence links", 1)[1]
    for benchmark in pages.BENCHMARK_IDS:
        assert f"`{benchmark}`" in doc
