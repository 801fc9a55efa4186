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
    from generator.render import compare
    from generator.verify.verification import Verification

    sheets = content.load("tests/samples/golden")
    pairs = {(p["a"], p["b"]): p["sheets"][0] for p in compare.compare_pairs(sheets, Verification(None))}
    # ones: torch.ones and jnp.ones call the same name, but no `same:` proof covers them; first-release: text vs none.
    assert pairs[("pytorch", "jax")] == {"id": "golden", "title": "Golden sample", "rows": 2, "differ": 1, "lacking": 1}
    assert pairs[("pytorch", "keras")]["differ"] == 2  # and "2016" and "2015"


def _compare_sheet(tmp_path, extra: str, counterexample: str = ""):
    row = f"""\
  - id: r
    title: R
{extra}    cells:
      pytorch:
        code: |
          y = x.sum(dim=0)
        check: |
          assert y == 1
{counterexample}      jax:
        code: |
          y = jnp.sum(x, axis=0)
      tf:
        code: |
          y = tf.reduce_sum(x, axis=0)
"""
    (sheet,) = content.load(write_content(tmp_path, {"s.yaml": section(row)}, columns=(("pytorch", "python"), ("jax", "python"), ("tf", "python"))))
    return sheet, next(sheet.rows())


def test_differences_only_selects_from_proofs_declarations_and_idioms(tmp_path):
    from generator.render import compare
    from generator.verify.equivalence import Outcome
    from generator.verify.verification import Verification

    sheet, row = _compare_sheet(tmp_path, "")
    nothing = Verification(None)
    assert compare.reasons(sheet, row, "pytorch", "jax", nothing) == ["not proven to compute the same"]
    proven = Verification(None, same={("t", "r"): Outcome(True, 3, ("pytorch", "jax", "tf"))})
    assert compare.reasons(sheet, row, "pytorch", "jax", proven) == []  # the same value, proven: not a difference
    # a declared difference sets PyTorch apart from the others, not JAX from TensorFlow
    sheet, row = _compare_sheet(tmp_path / "d", '    differs:\n      - what: "`dim`, not `axis`"\n        columns: [pytorch]\n')
    assert compare.reasons(sheet, row, "jax", "pytorch", proven) == ["`dim`, not `axis`"]
    assert compare.reasons(sheet, row, "jax", "tf", proven) == []
    # a wrong snippet of PyTorch that passes JAX's keyword is the other column's idiom
    wrong = "        counterexamples:\n          - code: |\n              y = x.sum(axis=1)\n            why: the other axis\n"
    sheet, row = _compare_sheet(tmp_path / "i", "", wrong)
    assert compare.idioms(row.cells[0], row.cells[1]) == ["axis="]
    assert compare.reasons(sheet, row, "pytorch", "jax", proven) == ["a wrong snippet of Pytorch uses Jax's axis="]
    data = compare.row_data(sheet, row, proven)
    assert data == {"s": ["pytorch", "jax", "tf"], "i": [["pytorch", "jax", ["axis="]], ["pytorch", "tf", ["axis="]]]}


def test_search_index_carries_notes_keywords_pages_and_column_families(tmp_path):
    files = _golden_site()
    index = _data(files, "search-index.js")
    assert index["format"] == 2
    assert index["sheets"][0]["columns"][1] == ["keras", "Keras", "keras@jax+keras@torch"]
    rows = {row[1]: row for row in index["rows"]}
    assert "float32" in rows["ones"][5]["n"].split() and "pytorch" in rows["ones"][5]["n"].split()
    row = _row_with_setup("kw", "import math", "y = math.fsum([1.0], start=2)")
    (sheet,) = content.load(write_content(tmp_path, {"s.yaml": section(row)}))
    from generator.render import reader

    (entry,) = reader.search_index([sheet])["rows"]
    assert entry[4][0][3] == ["start="]  # the keywords a cell passes


def test_a_runnable_script_prints_what_the_code_computed_and_runs_in_a_scratch_directory(tmp_path):
    import subprocess
    import sys

    from generator.render import reader
    from generator.verify.verification import Verification

    code = "import pathlib\npathlib.Path('out').mkdir()\nm = sum(data) / len(data)\ndel data\nm, m * 2"
    (sheet,) = content.load(write_content(tmp_path / "c", {"s.yaml": section(_row_with_setup("mean", "data = [1, 2]", code))}))
    row = next(sheet.rows())
    script = reader.runnable(sheet, row, row.cells[0], Verification(None))
    assert script.index("data = [1, 2]") < script.index("m = sum(data)") < script.index("# what it computed")
    (tmp_path / "run.py").write_text(script)
    for _ in range(2):  # the directory it makes is its own: a second run does not find the first one's
        done = subprocess.run([sys.executable, str(tmp_path / "run.py")], cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert done.stdout == "m = 1.5\nm, m * 2 = (1.5, 3.0)\n"  # data was deleted; the last line's value
    assert not (tmp_path / "out").exists()


def test_a_gpu_only_script_keeps_its_lane_s_gpu_environment():
    from generator.model import CODE, Cell, Column, Row, Section, Sheet, Snippet, Source
    from generator.render import reader
    from generator.verify.verification import Verification

    cell = Cell("jax", CODE, Source("x.yaml", 1), code=Snippet("d = jax.devices()[0]\n", 3), setup=Snippet("import jax\n", 2), lanes=("jax",), gpu_only="no GPU on a CPU")
    row = Row("r", "R", Source("x.yaml", 1), (cell,))
    sheet = Sheet("t", "T", Source("x.yaml", 1), (Column("jax", "JAX", ("jax",)),), (Section("s", "S", Source("x.yaml", 1), (row,)),))
    script = reader.runnable(sheet, row, cell, Verification(None))
    assert "os.environ.setdefault('JAX_PLATFORMS', 'cuda,cpu')" in script and "'cpu')" not in script
    assert "xla_force_host_platform_device_count" not in script and "runs on an NVIDIA GPU only: no GPU on a CPU" in script


def test_a_torchrun_script_leaves_its_process_group_before_it_exits():
    """One torchrun process in about twelve aborted in gloo's teardown after its cell had passed
    (CI, frameworks/data-parallel): the script destroys the group last, after a barrier."""
    from generator.model import CODE, Cell, Column, Row, Section, Sheet, Snippet, Source
    from generator.render import reader
    from generator.verify.verification import Verification

    def script_of(lane: str) -> str:
        cell = Cell("pytorch", CODE, Source("x.yaml", 1), code=Snippet("y = 1\n", 3), setup=Snippet("import torch\n", 2), lanes=(lane,))
        row = Row("r", "R", Source("x.yaml", 1), (cell,))
        sheet = Sheet("t", "T", Source("x.yaml", 1), (Column("pytorch", "PyTorch", ("torch",)),), (Section("s", "S", Source("x.yaml", 1), (row,)),))
        return reader.runnable(sheet, row, cell, Verification(None))

    several = script_of("torch-dist")
    assert several.rstrip().endswith("_dist.destroy_process_group()")
    assert several.index("y = 1") < several.index("_dist.barrier()") < several.index("_dist.destroy_process_group()")
    assert "destroy_process_group" not in script_of("torch")


def test_see_also_links_both_ways_to_the_row_s_own_page(tmp_path):
    from generator.render.views import see_also_links

    rows = "".join(
        f"  - id: r{i}\n    title: Row `{i}`\n{extra}    cells:\n      pytorch: {{text: a}}\n      jax: {{text: b}}\n"
        for i, extra in ((1, "    see_also: [r2, t/r3]\n"), (2, ""), (3, ""))
    )
    (sheet,) = content.load(write_content(tmp_path, {"s.yaml": section(rows)}))
    links = see_also_links([sheet])["t"]
    assert [(link["href"], link["title"]) for link in links["r1"]] == [("t.html#r2", "Row `2`"), ("t.html#r3", "Row `3`")]
    assert [link["href"] for link in links["r3"]] == ["t.html#r1"]  # and back
    from generator.render import html as render
    from generator.verify.verification import Verification

    page = render.render_site([sheet], Verification(None))["t.html"].decode()
    assert '<span class="see-also">See also: <a href="t.html#r2">Row <code>2</code></a> (Test sheet), ' in page
