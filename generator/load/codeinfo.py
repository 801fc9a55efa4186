"""What a code cell's Python says, read statically: the APIs it calls, and helpers it hides.

- `api_names(cell)`: the dotted names the visible code calls, with import aliases resolved from
  the cell's setup and code (`F.relu` with `import torch.nn.functional as F` is
  `torch.nn.functional.relu`); a method called on a value is `.name` (`.fit`, `.backward`).
  Search finds rows by these, and the compare view calls two cells "the same API" when the last
  parts of their names agree (`torch.ones` and `jax.numpy.ones`).
- `hidden_helper_errors(sheets)`: visible code must not call a function or class that only the
  hidden setup defines; a reader could neither see nor run it. Each call is a content error at its
  file:line.
"""

from __future__ import annotations

import ast
from functools import cache

from generator.errors import ContentError
from generator.model import CODE, Cell, Sheet


def _aliases(*trees: ast.AST) -> dict[str, str]:
    """Local name -> the module or object it was imported as."""
    names: dict[str, str] = {}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        names[alias.asname] = alias.name
                    else:
                        root = alias.name.split(".")[0]
                        names[root] = root
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    if alias.name != "*":
                        names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def _dotted(node: ast.AST) -> list[str] | None:
    """['a', 'b', 'c'] for a.b.c; None when the chain does not start at a plain name."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


@cache
def parse(text: str) -> ast.Module | None:
    """The tree of `text`, parsed once per process (the check at load and the reader both read it;
    the trees are only read, never changed)."""
    try:
        return ast.parse(text)
    except SyntaxError:
        return None


def api_names(cell: Cell) -> list[str]:
    """The APIs the cell's visible code calls, in order of first call, without repeats."""
    if cell.kind != CODE or not cell.code:
        return []
    return list(_api_names(cell.setup.text if cell.setup else "", cell.code.text))


@cache
def _api_names(setup_text: str, code_text: str) -> tuple[str, ...]:
    # memoised: search, signatures and the compare view each ask for every cell (3 s of a build)
    code = parse(code_text)
    if code is None:
        return ()
    setup = parse(setup_text) if setup_text else None
    aliases = _aliases(*(t for t in (setup, code) if t is not None))
    seen: dict[str, None] = {}
    for node in ast.walk(code):
        func = node.func if isinstance(node, ast.Call) else None
        if func is None:
            continue
        parts = _dotted(func)
        if parts is not None and parts[0] in aliases:
            seen.setdefault(".".join([aliases[parts[0]], *parts[1:]]), None)
        elif isinstance(func, ast.Attribute):
            seen.setdefault("." + func.attr, None)  # a method of a value: model.fit, loss.backward
    return tuple(seen)


def leaf(name: str) -> str:
    """The last part of an API name: what the compare view matches on."""
    return name.rsplit(".", 1)[-1]


def _defined_helpers(setup: ast.Module) -> dict[str, int]:
    """Functions and classes the setup defines at its top level (lambdas bound to a name too)."""
    helpers = {}
    for node in setup.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            helpers[node.name] = node.lineno
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    helpers[target.id] = node.lineno
    return helpers


def _bound(tree: ast.Module) -> set[str]:
    """Every name the visible code binds itself (so calling it is not calling a hidden helper)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def hidden_helper_calls(cell: Cell) -> list[tuple[int, str]]:
    """(file line, name) of each call in the visible code to a helper only the setup defines."""
    if cell.kind != CODE or not cell.code or not cell.setup:
        return []
    setup, code = parse(cell.setup.text), parse(cell.code.text)
    if setup is None or code is None:
        return []
    helpers = _defined_helpers(setup)
    hidden = set(helpers) - _bound(code) if helpers else set()
    if not hidden:
        return []
    calls = []
    for node in ast.walk(code):
        used = []
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            used.append(node.func)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            used += [d.func if isinstance(d, ast.Call) else d for d in node.decorator_list]
        for name in used:
            if isinstance(name, ast.Name) and name.id in hidden:
                calls.append((cell.code.line + name.lineno - 1, name.id))
    return sorted(set(calls))


def hidden_helper_errors(sheets: list[Sheet]) -> list[ContentError]:
    errors = []
    for sheet in sheets:
        for row in sheet.rows():
            for cell in row.cells:
                for line, name in hidden_helper_calls(cell):
                    defined = cell.setup.line + _defined_helpers(parse(cell.setup.text))[name] - 1
                    errors.append(
                        ContentError(
                            cell.source.path,
                            line,
                            f"the code of {row.id} [{cell.column}] calls '{name}', which only the hidden setup "
                            f"defines (line {defined}): show its definition in 'code', or build the value in 'setup'",
                        )
                    )
    return errors
