"""The identity of code: a hash of its canonical form, so that an edit that changes no behaviour moves
no identity (jupyter-cache hashes only the parts of a notebook that change its outputs).

The canonical form of a module is its syntax tree with the docstrings and other bare string
statements left out (comments and formatting never reach the tree), written out with the node types
and their fields, without line numbers. A comment or docstring edit in the worker leaves every cache
key and every GPU or older-release ledger entry valid; a change of what the code does moves them.

The form does not depend on the Python version that parses the code: a GPU machine with another
Python must compute the same identities as the build. So it is not `ast.dump` (whose output changed in
3.13): a field whose value is None or an empty list is left out, which is also what a newer Python's
new optional fields hold in code that does not use them (`type_params` since 3.12).
"""

from __future__ import annotations

import ast
import hashlib
import json
import os


def canonical(source: str, filename: str = "<code>") -> str:
    """The canonical text of a module's source: its tree without docstrings, as nested calls."""
    return _form(_without_docstrings(ast.parse(source, filename=filename)))


def module_digest(path: str) -> str:
    """The sha256 of one module's canonical form."""
    with open(path, encoding="utf-8") as handle:
        return hashlib.sha256(canonical(handle.read(), path).encode()).hexdigest()


def package_digest(folder: str) -> str:
    """The sha256 of the canonical forms of every module in `folder` (its *.py files), by name."""
    names = sorted(name for name in os.listdir(folder) if name.endswith(".py"))
    parts = []
    for name in names:
        with open(os.path.join(folder, name), encoding="utf-8") as handle:
            parts.append([name, canonical(handle.read(), name)])
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def _is_string_statement(node: ast.AST) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _without_docstrings(tree: ast.AST) -> ast.AST:
    """The tree with every statement that is only a string (docstrings, string 'comments') removed."""
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            statements = getattr(node, field, None)
            if isinstance(statements, list):
                kept = [s for s in statements if not _is_string_statement(s)]
                if len(kept) != len(statements):
                    setattr(node, field, kept)
    return tree


def _form(value) -> str:
    if isinstance(value, ast.AST):
        fields = []
        for name in value._fields:
            item = getattr(value, name, None)
            if item is None or item == []:
                continue
            fields.append(f"{name}={_form(item)}")
        return f"{type(value).__name__}({','.join(fields)})"
    if isinstance(value, list):
        return "[" + ",".join(_form(item) for item in value) + "]"
    return repr(value)
