"""Editing a cell's code for a mutant: one statement (or header expression) rewritten from its changed
syntax tree, every other line kept as it was, the line count kept (tracebacks still point at the YAML)."""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator


def replace_span(lines: list[str], node: ast.AST, text: str) -> str:
    """The code with `node`'s source span replaced by `text`, padded to the span's number of lines."""
    start, end = node.lineno - 1, node.end_lineno - 1
    before = lines[start][: char(lines[start], node.col_offset)]
    after = lines[end][char(lines[end], node.end_col_offset) :]
    padding = "\n" * (end - start)
    if padding and after.strip() and not after.lstrip().startswith("#"):
        padding = ""  # more code follows on the last line: keep it on this one (a line shorter is harmless)
    if after.endswith("\n") and padding:
        after_text = after
        return "".join(lines[:start]) + before + text + after_text.rstrip("\n") + padding + "\n" + "".join(lines[end + 1 :])
    return "".join(lines[:start]) + before + text + padding + after + "".join(lines[end + 1 :])


def char(line: str, byte_offset: int) -> int:
    """ast gives UTF-8 byte offsets; slicing needs character offsets."""
    return len(line.encode("utf-8")[:byte_offset].decode("utf-8", errors="ignore"))


def statement_edit(lines, statement: ast.AST, edit) -> str | None:
    """Apply `edit` (a function that changes a copy of `statement` in place and returns True when it
    did) and return the code with that statement rewritten, or None."""
    changed = copy.deepcopy(statement)
    if not edit(changed):
        return None
    return replace_span(lines, statement, ast.unparse(changed))


def edit_roots(tree: ast.Module) -> Iterator[ast.AST]:
    """The pieces of code an edit rewrites as a whole: simple statements, and the expressions of
    compound statements' headers (decorators, `with` items, a loop's iterable, a condition)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Expr | ast.Return):
            yield node
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield from node.decorator_list
        elif isinstance(node, ast.With):
            yield from (item.context_expr for item in node.items)
        elif isinstance(node, ast.For):
            yield node.iter
        elif isinstance(node, ast.If | ast.While):
            yield node.test


def nodes_in(statement: ast.stmt) -> list[ast.AST]:
    return list(ast.walk(statement))


def path_to(root: ast.AST, target: ast.AST) -> list:
    """How to find `target` again in a deep copy of `root`: the field names and indices from root down."""
    def search(node, path):
        if node is target:
            return path
        for name, value in ast.iter_fields(node):
            if isinstance(value, list):
                for index, item in enumerate(value):
                    if isinstance(item, ast.AST):
                        found = search(item, [*path, (name, index)])
                        if found is not None:
                            return found
            elif isinstance(value, ast.AST):
                found = search(value, [*path, (name, None)])
                if found is not None:
                    return found
        return None

    return search(root, [])


def follow(root: ast.AST, path: list) -> ast.AST:
    node = root
    for name, index in path:
        node = getattr(node, name) if index is None else getattr(node, name)[index]
    return node


def edit_at(lines, statement, target, change) -> str | None:
    """Rewrite `statement` with `change(copy_of_target, parent_of_copy)` applied to the copy of `target`."""
    path = path_to(statement, target)
    if path is None:
        return None

    def edit(copied):
        node = follow(copied, path)
        parent = follow(copied, path[:-1]) if path else None
        return change(node, parent, path[-1] if path else None)

    return statement_edit(lines, statement, edit)


def segment(lines, node) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 60 else text[:57] + "..."


def replace_in_parent(parent, slot, replacement) -> bool:
    if parent is None or slot is None:
        return False
    name, index = slot
    if index is None:
        setattr(parent, name, replacement)
    else:
        getattr(parent, name)[index] = replacement
    return True


def drop_keyword(call: ast.Call, index: int) -> bool:
    del call.keywords[index]
    return True


def flip_keyword(call: ast.Call, index: int) -> bool:
    call.keywords[index].value = ast.Constant(not call.keywords[index].value.value)
    return True


def set_keyword(call: ast.Call, index: int, value: ast.AST) -> bool:
    call.keywords[index].value = value
    return True


def set_arg(call: ast.Call, index: int, value: ast.AST) -> bool:
    call.args[index] = value
    return True


def truncate_args(call: ast.Call, count: int) -> bool:
    call.args = call.args[:count]
    call.keywords = [k for k in call.keywords if k.arg not in {"device", "sharding"}]
    return True


def set_constant(node: ast.Constant, value) -> bool:
    node.value = value
    return True


