"""The `python-loop` operator's two halves: which calls are structured loops (`jax.lax.scan`,
`keras.ops.scan`, `tf.foldl`, `tf.scan`), and the Python loop a reader writes instead, as one
expression that computes the same values and types (the outputs stacked with the framework's own
stack) but traces one unrolled step per element instead of one loop."""

from __future__ import annotations

import ast

from generator.mutate.tables import STRUCTURED_LOOPS


def structured_loop(name: str) -> tuple[str, str] | None:
    """(which structured loop, whose) a call of the dotted `name` is: ("scan", "jax"), ("scan", "keras"),
    ("foldl" or "tf.scan", "tensorflow"), or None. Only module-qualified calls (`jax.lax.scan`,
    `lax.scan`, `keras.ops.scan`, `tf.foldl`, `tf.scan`): `nnx.scan(f, ...)` makes a function and has
    the decorator operator instead."""
    module, _, last = name.rpartition(".")
    if not module or last not in STRUCTURED_LOOPS:
        return None
    root = module.split(".", 1)[0]
    if root in {"tf", "tensorflow"}:
        return ("tf.scan" if last == "scan" else last), "tensorflow"
    if last != "scan":
        return None
    if root == "keras" or module.endswith("ops") and root != "jax":
        return last, "keras"
    if root == "jax" or module == "lax":
        return last, "jax"
    return None


def loop_parts(call: ast.Call, kind: str) -> tuple[ast.AST, ast.AST | None, ast.AST] | None:
    """(step function, initial carry or None, elements) of a structured loop call, or None where it
    takes options a plain loop does not mirror (`reverse`, `length`, and the like)."""
    names = ("f", "init", "xs") if kind == "scan" else ("fn", "elems", "initializer")
    if len(call.args) > 3:
        return None
    given = dict(zip(names, call.args, strict=False))
    for keyword in call.keywords:
        if keyword.arg not in names or keyword.arg in given:
            return None
        given[keyword.arg] = keyword.value
    if kind == "scan":
        if not {"f", "init", "xs"} <= given.keys():
            return None
        return given["f"], given["init"], given["xs"]
    if not {"fn", "elems"} <= given.keys():
        return None
    return given["fn"], given.get("initializer"), given["elems"]


# `python_loop`'s expressions: a lambda that runs the step in a Python loop over the leading axis of
# `_xs` (an array, or a tuple or list of arrays sliced together) and returns what the structured loop
# returns, the outputs stacked by `_stack`. The walrus in the comprehension rebinds the inner lambda's
# `_c`, the carry.
_LOOP_STEP = "(tuple(_e[_i] for _e in _xs) if isinstance(_xs, (tuple, list)) else _xs[_i])"
_LOOP_LENGTH = "(_xs[0] if isinstance(_xs, (tuple, list)) else _xs).shape[0]"
_LOOP_BODIES = {
    # jax.lax.scan / keras.ops.scan: f(carry, x) -> (carry, y); returns (carry, stacked ys)
    "scan": (f"_ys.append((_o := _f(_c, {_LOOP_STEP}))[1]) or (_c := _o[0])", "(_c, _stack(_ys))"),
    # tf.foldl: fn(acc, x) -> acc; returns the last acc (no initializer: the first element is the first acc)
    "foldl": (f"(_c := ({_LOOP_STEP} if _c is None else _f(_c, {_LOOP_STEP})))", "_c"),
    # tf.scan: fn(acc, x) -> acc; returns every acc, stacked
    "tf.scan": (f"_ys.append(_c := ({_LOOP_STEP} if _c is None else _f(_c, {_LOOP_STEP})))", "_stack(_ys)"),
}
# How each framework's reader stacks a list of step outputs (pytrees leaf by leaf; None stays None).
_STACKERS = {
    "jax": "lambda ys: None if ys[0] is None else __import__('jax').tree.map(lambda *a: __import__('jax').numpy.stack(a), *ys)",
    "keras": "lambda ys: None if ys[0] is None else __import__('keras').tree.map_structure(lambda *a: __import__('keras').ops.stack(a), *ys)",
    "tensorflow": "lambda ys: __import__('tensorflow').nest.map_structure(lambda *a: __import__('tensorflow').stack(a), *ys)",
}


def python_loop(kind: str, framework: str, step: ast.AST, init: ast.AST | None, xs: ast.AST) -> ast.AST:
    """`jax.lax.scan(f, c, xs)` / `keras.ops.scan(f, c, xs)` / `tf.foldl(fn, xs, initializer=c)` /
    `tf.scan(fn, xs, c)` as the Python loop a reader writes instead, as one expression: the same values
    and types (outputs stacked with the framework's own stack), but traced as one unrolled step per
    element, not as one loop."""
    body, result = _LOOP_BODIES[kind]
    loop = ast.parse(
        f"(lambda _f, _init, _xs, _ys, _stack: (lambda _c: ([{body} for _i in range({_LOOP_LENGTH})], {result})[1])(_init))",
        mode="eval",
    ).body
    stack = ast.parse(_STACKERS[framework], mode="eval").body
    return ast.Call(
        loop, [step, init if init is not None else ast.Constant(None), xs, ast.List([], ast.Load()), stack], []
    )
