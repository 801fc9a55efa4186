"""What the reader features build on: API names read from code, the hidden-helper rule, the
search index, the runnable scripts and the offline zip (browser behaviour: tests/browser/)."""

from __future__ import annotations

import pytest

from generator.errors import ContentInvalid
from generator.load import codeinfo, content
from tests.conftest import section, write_content


def _cell(code: str, setup: str = ""):
    from generator.model import CODE, Cell, Snippet, Source

    return Cell("c", CODE, Source("x.yaml", 1), code=Snippet(code, 10), setup=Snippet(setup, 3) if setup else None, lanes=("python",))


def test_api_names_resolve_import_aliases_and_name_methods():
    cell = _cell(
        "y = F.relu(x)\nz = jnp.ones(3).sum()\nm = nnx.Conv(1, 2, 3, rngs=r)\nloss.backward()\nprint(y)",
        setup="import torch.nn.functional as F\nimport jax.numpy as jnp\nfrom flax import nnx\n",
    )
    assert set(codeinfo.api_names(cell)) == {"torch.nn.functional.relu", ".sum", "jax.numpy.ones", "flax.nnx.Conv", ".backward"}
    assert codeinfo.leaf("jax.numpy.ones") == codeinfo.leaf("torch.ones") == "ones"


def test_a_call_to_a_helper_only_the_setup_defines_is_an_error_at_its_line(tmp_path):
    root = write_content(tmp_path / "content", {"s.yaml": section(_row_with_setup("uses-helper", "def helper(v):\n    return v", "x = 1\ny = helper(x)"))})
    with pytest.raises(ContentInvalid) as info:
        content.load(root)
    (error,) = info.value.errors
    assert error.path.endswith("s.yaml")
    lines = (tmp_path / "content" / "t" / "s.yaml").read_text().splitlines()
    assert lines[error.line - 1].strip() == "y = helper(x)"
    assert "'helper'" in error.message and "hidden setup" in error.message


@pytest.mark.parametrize(
    "setup, code",
    [
        ("def helper(v):\n    return v", "def helper(v):\n    return v + 1\ny = helper(1)"),  # defined in sight
        ("def helper(v):\n    return v\nmodel = helper(2)", "y = model + 1"),  # a value built in setup
        ("import math", "y = math.sqrt(4)"),
    ],
)
def test_code_that_shows_its_helpers_or_uses_values_is_fine(tmp_path, setup, code):
    root = write_content(tmp_path / "content", {"s.yaml": section(_row_with_setup("fine", setup, code))})
    assert content.load(root)


def test_decorating_with_a_hidden_helper_is_a_call_too(tmp_path):
    root = write_content(tmp_path / "content", {"s.yaml": section(_row_with_setup("deco", "def trace(f):\n    return f", "@trace\ndef g():\n    pass"))})
    with pytest.raises(ContentInvalid):
        content.load(root)


def _row_with_setup(row_id: str, setup: str, code: str) -> str:
    def block(text: str) -> str:
        return "\n".join(" " * 10 + line for line in text.splitlines())

    return (
        f"  - id: {row_id}\n    title: {row_id}\n    cells:\n      pytorch:\n        lanes: [python]\n"
        f"        setup: |\n{block(setup)}\n        code: |\n{block(code)}\n      jax: {{text: fact}}\n"
    )


# ---------------------------------------------------------------------------------------------
# what the build writes


def _golden_site():
    from tests.golden import render_sample

    return render_sample()


def _data(files: dict, path: str):
    import json

    text = files[path].decode()
    prefix, _, rest = text.partition(",")
    assert prefix.startswith("hpg.receive(") and text.endswith(");\n")
    return json.loads(rest[: -len(");\n")])


def test_runnable_script_is_lane_environment_setup_and_code_never_the_check():
    from generator.load import content as content_module

    files = _golden_site()
    scripts = _data(files, "data/golden.runnable.js")
    keras = scripts["ones"]["keras"]
    sheet = next(s for s in content_module.load("tests/samples/golden"))
    cell = next(c for r in sheet.rows() if r.id == "ones" for c in r.cells if c.column == "keras")
    assert keras.index("os.environ.setdefault('KERAS_BACKEND', 'jax')") < keras.index(cell.setup.text.strip()) < keras.index(cell.code.text.strip())
    torch_cell = next(c for r in sheet.rows() if r.id == "ones" for c in r.cells if c.column == "pytorch")
    assert torch_cell.code.text.strip() in scripts["ones"]["pytorch"]
    assert torch_cell.check.text.strip() not in scripts["ones"]["pytorch"]
    # keras@torch failed in the sample: the script names only the backend that passed.
    assert "#   keras@jax: 2026-01-02 on cpu: Test CPU (2 cores); python 3.11.7" in keras
    assert "keras@torch" not in keras and "passed on each of" not in keras


def test_search_index_lists_every_row_with_api_names():
    files = _golden_site()
    index = _data(files, "search-index.js")
    assert [s["id"] for s in index["sheets"]] == ["golden"]
    rows = {row[1]: row for row in index["rows"]}
    assert set(rows) == {"ones", "first-release"}
    apis = {cell[0]: cell[2] for cell in rows["ones"][4]}
    assert apis[0] == ["torch.ones"] and apis[2] == ["jax.numpy.ones"]


def test_offline_zip_holds_the_site_with_its_own_offline_page():
    import io
    import zipfile

    from generator.render import reader

    files = _golden_site()
    with zipfile.ZipFile(io.BytesIO(files[reader.OFFLINE_ZIP])) as archive:
        names = {n.removeprefix("ml-hyperpolyglot/") for n in archive.namelist()}
        inside = archive.read("ml-hyperpolyglot/offline.html").decode()
        assert archive.read("ml-hyperpolyglot/golden.html") == files["golden.html"]
    assert names == set(files) - {reader.OFFLINE_ZIP}
    assert "This is the offline copy" in inside and reader.OFFLINE_ZIP not in inside
    assert f'href="{reader.OFFLINE_ZIP}"' in files["offline.html"].decode()
    assert _golden_site()[reader.OFFLINE_ZIP] == files[reader.OFFLINE_ZIP]  # the same bytes each build


def test_compare_counts_differences_and_rows_one_lacks():
    from generator.render import reader

    sheets = content.load("tests/samples/golden")
    pairs = {(p["a"], p["b"]): p["sheets"][0] for p in reader.compare_pairs(sheets)}
    # ones: torch.ones / keras.ops.ones / jnp.ones all call "ones"; first-release: text vs none.
    assert pairs[("pytorch", "jax")] == {"id": "golden", "title": "Golden sample", "rows": 2, "differ": 0, "lacking": 1}
    assert pairs[("pytorch", "keras")]["differ"] == 1  # "2016" and "2015"
