"""CPU-only idioms in cells that claim to run on a GPU, found without a GPU.

On the GPU machine the PyTorch lanes make CUDA the default device, Keras on PyTorch keeps its
tensors on the GPU, and JAX's default device is the GPU. The GPU runs of the content failed for a
handful of repeated reasons; each is a pattern here. A cell that can run on a GPU (a GPU lane, not
`cpu_only`) and matches one is reported with its file:line and the portable idiom, so it is fixed,
or marked `cpu_only` with a reason, before the scarce GPU time is spent on it. Heuristic by nature:
it catches the known mistakes, and the GPU run remains the proof. It reads code, not comments; it
leaves alone lines under an `if` that tests for the CPU, and a line that says `# gpu-ok` (with why)
is one a reader has looked at.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from generator.lanes import GPU_LANES, LANES
from generator.model import CODE, Sheet

TORCH_RULES = (
    (re.compile(r"(?<!\.cpu\(\))(?<!\.detach\(\)\.cpu\(\))\.numpy\(\)"), "`.numpy()` on a tensor fails on CUDA: use `.cpu().numpy()` or `.numpy(force=True)`"),
    (re.compile(r"torch\.Generator\(\s*\)"), "a CPU `torch.Generator()` cannot drive CUDA tensors: pass `device=`"),
    (re.compile(r"assert\b.*(device\.type\s*==\s*['\"]cpu['\"]|==\s*torch\.device\(\s*['\"]cpu['\"]\s*\))"), "asserts the CPU device: assert a device-independent fact or compare with the input's device"),
)
JAX_RULES = (
    (re.compile(r"(device_count\(\)|len\(jax\.devices\(\)\))\s*==\s*8\b"), "asserts the 8 host devices of the CPU lane: one GPU has 1 (size from `jax.devices()`, or mark `cpu_only`)"),
    (re.compile(r"(make_mesh|DeviceMesh|create_device_mesh)\(\s*\(\s*(8|2\s*,\s*4|4\s*,\s*2)\s*,?\s*\)"), "a mesh sized for the 8 host devices: size it from `jax.device_count()` (or mark `cpu_only`)"),
    (re.compile(r"jax\.devices\(\s*['\"]cpu['\"]\s*\)|platform\s*==\s*['\"]cpu['\"]"), "asks for or asserts a CPU device: on a GPU the arrays live there"),
)

KERAS_TORCH_RULES = (
    (re.compile(r"np\.(asarray|array)\(\s*(keras\.)?ops\."), "NumPy cannot read the CUDA tensor Keras on PyTorch returns: use `keras.ops.convert_to_numpy`"),
)


@dataclass(frozen=True)
class Finding:
    where: str  # file:line
    row: str
    column: str
    lane: str
    text: str
    advice: str

    def format(self) -> str:
        return f"{self.where}: {self.row} [{self.column}] on {self.lane}: {self.advice}\n    {self.text.strip()}"


_CPU_GUARD = re.compile(r"^\s*(if|elif)\b.*['\"]cpu['\"]")
_COMMENT = re.compile(r"\s#.*$")


def _lines(text: str):
    """(offset, line, its code without comment) for each line that is code outside a CPU-only branch."""
    guard_indent = None
    for offset, line in enumerate(text.splitlines()):
        stripped = line.strip()
        if not stripped:
            continue
        indent = len(line) - len(line.lstrip())
        if guard_indent is not None and indent <= guard_indent:
            guard_indent = None
        if guard_indent is not None or stripped.startswith("#") or "# gpu-ok" in line:
            continue
        if _CPU_GUARD.match(line):
            guard_indent = indent
            continue
        yield offset, line, _COMMENT.sub("", line)


def _exempt(code: str) -> bool:
    """Lines that look like the patterns but are portable: a TensorFlow tensor's `.numpy()`, an
    assertion that also allows CUDA."""
    return "tape." in code or "tf." in code or ("assert" in code and "cuda" in code)


def findings(sheets: list[Sheet]) -> list[Finding]:
    out = []
    for sheet in sheets:
        for row in sheet.rows():
            for cell in row.cells:
                if cell.kind != CODE or cell.cpu_only:
                    continue
                for lane_name in cell.lanes:
                    if lane_name not in GPU_LANES:
                        continue
                    imports = LANES[lane_name].imports
                    rules = (TORCH_RULES if "torch" in imports else ()) + (JAX_RULES if "jax" in imports else ())
                    rules += KERAS_TORCH_RULES if {"keras", "torch"} <= set(imports) else ()
                    for snippet in (cell.setup, cell.code, cell.check):
                        if snippet is None:
                            continue
                        for offset, line, code in _lines(snippet.text):
                            for pattern, advice in rules:
                                if pattern.search(code) and not _exempt(code):
                                    out.append(Finding(f"{cell.source.path}:{snippet.line + offset}", f"{sheet.id}/{row.id}", cell.column, lane_name, line, advice))
    return out


def main(argv: list[str] | None = None) -> int:
    """`python -m generator.contrib.gpulint [CONTENT]`: list the findings; exit 1 when there are any."""
    import sys

    from generator.load import content

    args = sys.argv[1:] if argv is None else argv
    found = findings(content.load(args[0] if args else "content"))
    for finding in found:
        print(finding.format())
    cells = len({(f.row, f.column) for f in found})
    print(f"{len(found)} CPU-only idiom(s) in {cells} cell(s) that claim to run on a GPU", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
