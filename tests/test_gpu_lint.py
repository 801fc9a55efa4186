"""gpulint: the CPU-only idioms of GPU-eligible cells, found without a GPU."""

from __future__ import annotations

import os

from generator.contrib import gpulint
from generator.load import content
from tests.conftest import ROOT, write_content

ROWS = """\
id: s
title: S
rows:
  - id: r
    title: r
    cells:
      pytorch:
        lanes: [torch]
        code: |
          a = t.numpy()                       # flagged
          b = t.cpu().numpy()                 # portable
          g = torch.Generator()               # flagged
          # c = t.numpy()  (a comment)
          if t.device.type == "cpu":
              assert t.device == torch.device("cpu")   # only on the CPU: fine
          d = t.numpy()  # gpu-ok: looked at
      jax:
        lanes: [jax]
        code: |
          mesh = jax.make_mesh((8,), ("data",))   # flagged
          assert jax.device_count() == 8          # flagged
      keras:
        lanes: [keras@torch, keras@jax]
        code: |
          y = np.asarray(keras.ops.stop_gradient(t))   # flagged on the torch backend only
          z = keras.ops.convert_to_numpy(t)            # portable
  - id: host
    title: host
    cells:
      pytorch:
        lanes: [torch]
        cpu_only: the row is about host memory
        code: |
          a = t.numpy()
      jax:
        lanes: [python]
        code: |
          a = t.numpy()
      keras:
        text: none here
"""


def test_findings_name_file_line_and_the_portable_idiom(tmp_path):
    columns = (("pytorch", "python"), ("jax", "python"), ("keras", "python"))
    found = gpulint.findings(content.load(write_content(tmp_path, {"s.yaml": ROWS}, columns=columns)))
    where = [(os.path.basename(f.where), f.column, f.text.strip().split()[0]) for f in found]
    assert where == [
        ("s.yaml:10", "pytorch", "a"), ("s.yaml:12", "pytorch", "g"), ("s.yaml:20", "jax", "mesh"), ("s.yaml:21", "jax", "assert"), ("s.yaml:25", "keras", "y"),
    ]
    assert found[-1].lane == "keras@torch" and "keras.ops.convert_to_numpy" in found[-1].advice
    assert "`.cpu().numpy()`" in found[0].advice and "device=" in found[1].advice


def test_the_content_has_no_cpu_only_idiom_in_a_gpu_eligible_cell():
    found = gpulint.findings(content.load(os.path.join(ROOT, "content")))
    assert found == [], "\n".join(f.format() for f in found)
