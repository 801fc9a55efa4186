"""Editing a cell's code for a mutant: one statement (or header expression) rewritten from its changed
syntax tree, every other line kept as it was, the line count kept (tracebacks still point at the YAML)."""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator

from generator.mutate.tables import AXIS_SWAP


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


def add_keyword(call: ast.Call, name: str, value) -> bool:
    call.keywords.append(ast.keyword(name, ast.Constant(value)))
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


def reads_writes(statement) -> tuple[set[str], set[str]]:
    """The names a statement reads, and those it writes (`x[0] = 1` and `x.a = 1` write x)."""
    reads, writes = set(), set()
    for node in ast.walk(statement):
        if isinstance(node, ast.Name):
            (writes if isinstance(node.ctx, ast.Store) else reads).add(node.id)
        elif isinstance(node, ast.Subscript | ast.Attribute) and isinstance(node.ctx, ast.Store):
            base = node.value
            while isinstance(base, ast.Subscript | ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name):
                writes.add(base.id)
    if isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name):
        reads.add(statement.target.id)
    return reads, writes


def assigned_before(tree, statement) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.lineno < statement.lineno:
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef | ast.Import | ast.ImportFrom) and node.lineno < statement.lineno:
            names.update(getattr(node, "name", None) and [node.name] or [a.asname or a.name.split(".")[0] for a in getattr(node, "names", [])])
    return names


def statement_text(lines, statement):
    first = lines[statement.lineno - 1]
    indent = first[: len(first) - len(first.lstrip())]
    return "".join(lines[statement.lineno - 1 : statement.end_lineno]), indent


def int_value(node: ast.AST) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) and isinstance(node.operand.value, int):
        return -node.operand.value
    return None


def swap_axis(node: ast.AST) -> ast.AST | None:
    value = int_value(node)
    if value is not None and value in AXIS_SWAP:
        new = AXIS_SWAP[value]
        return ast.Constant(new) if new >= 0 else ast.UnaryOp(ast.USub(), ast.Constant(-new))
    if isinstance(node, ast.Tuple) and len(node.elts) > 1 and all(int_value(e) is not None for e in node.elts):
        return ast.Tuple(node.elts[:-1], ast.Load())
    return None


def python_if(call: ast.Call, operands_in_a_tuple: bool) -> ast.AST:
    """`torch.cond(p, t, f, (a, b))` / `jax.lax.cond(p, t, f, a, b)` / `tf.cond(p, t, f)` as the Python a
    reader writes instead: `(t(a, b) if p else f(a, b))`, which traces one branch."""
    pred, true_fn, false_fn, *operands = call.args
    if len(operands) == 1 and isinstance(operands[0], ast.Tuple | ast.List) and operands_in_a_tuple:  # torch.cond
        operands = list(operands[0].elts)
    args = [ast.Starred(o.value, ast.Load()) if isinstance(o, ast.Starred) else o for o in operands]
    return ast.IfExp(pred, ast.Call(true_fn, args, []), ast.Call(false_fn, args, []))
