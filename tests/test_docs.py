"""Docs that cannot go stale: every CLI command and option, every schema field, every lane is documented."""

from __future__ import annotations

import os
import re

import pytest

from generator.cli import parser
from generator.load.schema import SPECS
from generator.verify import lanes
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


def _schema_tables(doc: str) -> dict[str, dict[str, str]]:
    """{kind: {field: its table's second column}} from docs/schema.md's field tables."""
    tables: dict[str, dict[str, str]] = {}
    current = None
    for line in doc.splitlines():
        heading = re.match(r"^## `sheet.yaml`|^A \*\*(\w+)\*\*|^## A section file", line)
        if heading:
            current = heading.group(1) or ("sheet" if "sheet.yaml" in line else "section")
            tables.setdefault(current, {})
        elif current and line.startswith("| `"):
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            tables[current][cells[0].strip("`")] = cells[1]
        elif line.startswith("## "):
            current = None
    return tables


SCHEMA = {kind: {name: f.required for name, f in SPECS[kind].fields.items()} for kind in ("sheet", "column", "section", "row", "same", "cell", "counterexample")}


def test_schema_reference_matches_the_enforced_schema():
    tables = _schema_tables(_read("docs", "schema.md"))
    for kind, fields in SCHEMA.items():
        assert set(tables.get(kind, {})) == set(fields), f"docs/schema.md table for {kind}: {set(tables.get(kind, {}))} != {set(fields)}"


def test_required_fields_are_marked_required_in_the_docs():
    tables = _schema_tables(_read("docs", "schema.md"))
    for kind in ("sheet", "column", "section", "row"):
        for field, required in SCHEMA[kind].items():
            assert (tables[kind][field] == "yes") == required, (kind, field, tables[kind][field])


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


def test_guide_and_tradeoff_schema_is_documented():
    from generator.load import pages

    doc = _read("docs", "schema.md").split("## Guide and trade-off files", 1)[1]
    for kind in list(SPECS)[7:]:
        for field in SPECS[kind].fields:
            assert f"`{field}`" in doc, (kind, field)
    for verdict in pages.VERDICTS:
        assert f"`{verdict}`" in doc
    for benchmark in pages.BENCHMARK_IDS:
        assert f"`{benchmark}`" in doc
