"""What the reader features build on: API names read from code, the hidden-helper rule, the
search index, the runnable scripts and the offline zip (browser behaviour: tests/browser/)."""

from __future__ import annotations

import pytest

from generator import codeinfo, content
from generator.errors import ContentInvalid
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
