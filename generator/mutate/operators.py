"""Mutants of a code cell: small wrong variants its check must reject.

Two families of operators, each a function from the cell's parsed code to candidate edits:

- **value** operators change what is computed — an axis, a keyword, a boolean, a constant, a dtype, a
  sibling function (argmax for argmin), a deleted call statement, two statements swapped. A value
  mutant that leaves exactly the values the original left is *equivalent* (the runner decides that
  by comparing fingerprints) and is not counted;
- **mechanism** operators keep the values and remove the mechanism a row is about — unwrap `jax.jit`,
  `tf.function`, `torch.compile`, `vmap`; drop `jit_compile=True`, `fullgraph=True`, `donate_argnums`;
  remove a cast, an `autocast`/`no_grad` block, a `stop_gradient`/`detach`; flip `weights_only`/
  `safe_mode`; put a sharded array on one device. The same numbers without the mechanism are exactly
  the weakness these look for, so a mechanism mutant is never equivalent by values.

Edits are made on the source text, one statement (or one decorator or `with` header) at a time: the
statement is rebuilt from its modified syntax tree (`ast.unparse`) and padded to its old number of
lines, so every other line keeps its text and its line number (tracebacks still point at the YAML).
Everything is deterministic: the same code gives the same mutants in the same order.
"""

from __future__ import annotations

import ast
import warnings
from dataclasses import dataclass

from generator.mutate import edits, loops
from generator.mutate.tables import (
    AXIS_FUNCTIONS,
    AXIS_KEYWORDS,
    BARE_TRANSFORMS,
    CAST_FUNCTIONS,
    CAST_METHODS,
    CONTEXT_MANAGERS,
    CONTROL_FLOW,
    DECORATOR_TRANSFORMS,
    DTYPE_NAMES,
    GRADIENT_STOPS,
    MECHANISM_FLAGS,
    MECHANISM_SWITCHES,
    SAFETY_FLAGS,
    SETTING_CALLS,
    SIBLINGS,
    STRING_SIBLINGS,
    SWITCH_DEFAULTS,
    TRANSFORMS,
)

VALUE = "value"
MECHANISM = "mechanism"


@dataclass(frozen=True)
class Mutant:
    """One wrong variant of a cell's code."""

    operator: str  # e.g. "sibling", "axis", "unwrap-transform"
    family: str  # VALUE or MECHANISM
    description: str  # what changed, with the text it changed in: unique within the cell
    line: int  # 1-based line within the code where the change is
    code: str  # the whole mutated code


# Operators in the order they are tried; the cap takes one mutant of each in turn (see `mutants`).
MECHANISM_OPERATORS = ("unwrap-transform", "drop-decorator", "python-control-flow", "python-loop", "drop-mechanism-flag",
                       "flip-mechanism-flag", "delete-setting", "flip-safety", "remove-cast", "remove-context",
                       "remove-stop-gradient", "single-device")
VALUE_OPERATORS = ("sibling", "axis", "flip-bool", "dtype", "delete-call", "drop-keyword", "swap-statements", "constant")
OPERATOR_FAMILY = {**dict.fromkeys(MECHANISM_OPERATORS, MECHANISM), **dict.fromkeys(VALUE_OPERATORS, VALUE)}
# The value operators whose mutant, when it leaves the original's values, is equivalent: a dropped keyword
# equal to its default, a deleted call whose effect nothing reads, two statements that commute, a constant
# nothing depends on. For the others (a sibling function, an axis, a flipped flag, a dtype) the same values
# mean the test data cannot tell the two apart — argmax over either axis of a matrix whose answer is the
# same on both, isinf for isnan on an input holding both, a stable sort of data without ties — which is
# the weakness mutation testing is for: they are never equivalent by values, like the mechanism operators.
EQUIVALENT_BY_VALUES = frozenset({"drop-keyword", "delete-call", "swap-statements", "constant"})
DEFAULT_CAP = 12
CONSTANTS_CAP = 4  # a changed number is the least telling mutant: at most this many a cell


def mutants(code: str, cap: int = DEFAULT_CAP, defined_before: frozenset[str] = frozenset()) -> list[Mutant]:
    """The mutants of `code`, at most `cap`: the operators in order (mechanism first), one mutant of
    each in turn, so that no single operator takes every place. `defined_before`: names the setup
    defines (a swap that only moves a use before its definition is not tried)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    lines = code.splitlines(keepends=True)
    by_operator: dict[str, list[Mutant]] = {op: [] for op in (*MECHANISM_OPERATORS, *VALUE_OPERATORS)}
    seen = {code}
    descriptions: dict[str, int] = {}
    for operator, line, description, new_code in _candidates(tree, lines, defined_before):
        if new_code is None or new_code in seen or not _parses(new_code):
            continue
        seen.add(new_code)
        count = descriptions.get(description, 0)
        descriptions[description] = count + 1
        if count:  # the same edit at two places: tell them apart
            description = f"{description} (#{count + 1})"
        by_operator[operator].append(Mutant(operator, OPERATOR_FAMILY[operator], description, line, new_code))
    by_operator["constant"] = by_operator["constant"][:CONSTANTS_CAP]
    chosen: list[Mutant] = []
    queues = [queue for queue in by_operator.values() if queue]
    while queues and len(chosen) < cap:
        for queue in list(queues):
            if len(chosen) >= cap:
                break
            chosen.append(queue.pop(0))
            if not queue:
                queues.remove(queue)
    return chosen


def _parses(code: str) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a mutant may well be odd Python ("'list' object is not callable")
        try:
            compile(code, "<mutant>", "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            return False
    return True


def _call_name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call):
        return _dotted(node.func)
    return ""


def _is_transform(node: ast.AST) -> bool:
    """`jax.jit`, `tf.function`, `torch.compile`, `jax.vmap`, `nnx.jit`... (not a bare builtin `compile`,
    and not a call that returns one: in `jax.jit(f)(x)` the transform is the inner call)."""
    if not isinstance(node, ast.Attribute | ast.Name):
        return False
    name = _dotted(node)
    last = name.rsplit(".", 1)[-1]
    return last in TRANSFORMS and ("." in name or last in BARE_TRANSFORMS)


# --- the candidates -------------------------------------------------------------------------------


def _candidates(tree: ast.Module, lines: list[str], defined_before: frozenset[str]):
    """(operator, line, description, new code) for every edit the operators can make."""
    yield from _decorators(tree, lines)
    yield from _contexts(tree, lines)
    # the values of mechanism and safety flags have operators of their own (dropped, flipped): not flip-bool too
    flags = {id(k.value) for n in ast.walk(tree) if isinstance(n, ast.Call) for k in n.keywords if k.arg in MECHANISM_FLAGS | SAFETY_FLAGS}
    flags |= {id(k.value) for n in ast.walk(tree) if isinstance(n, ast.Call) for k in n.keywords if k.arg in AXIS_KEYWORDS}  # axis has its own
    for statement in edits.edit_roots(tree):
        for node in edits.nodes_in(statement):
            if isinstance(node, ast.Call):
                yield from _call_mutants(lines, statement, node)
            elif isinstance(node, ast.Attribute | ast.Name):
                yield from _name_mutants(lines, statement, node)
            elif isinstance(node, ast.Constant) and id(node) not in flags:
                yield from _constant_mutants(lines, statement, node)
    yield from _settings(tree, lines)
    yield from _deletions(tree, lines)
    yield from _swaps(tree, lines, defined_before)


def _decorators(tree, lines):
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                if isinstance(decorator, ast.Call) and _dotted(target).rsplit(".", 1)[-1] == "partial" and decorator.args:
                    target = decorator.args[0]  # @partial(jax.jit, static_argnums=0)
                last = _dotted(target).rsplit(".", 1)[-1]
                if _is_transform(target) or last in DECORATOR_TRANSFORMS:
                    # the decorator's own line becomes blank: `@` and its expression are removed
                    start = decorator.lineno - 1
                    text = lines[start]
                    at = text.rfind("@", 0, edits.char(text, decorator.col_offset))
                    if at < 0 or decorator.end_lineno != decorator.lineno or text[:at].strip():
                        continue
                    new_lines = list(lines)
                    new_lines[start] = "\n" if text.endswith("\n") else ""
                    yield "drop-decorator", decorator.lineno, f"remove the decorator @{ast.unparse(decorator)}", "".join(new_lines)


def _contexts(tree, lines):
    for node in ast.walk(tree):
        if isinstance(node, ast.With) and len(node.items) == 1:
            item = node.items[0]
            name = _dotted(item.context_expr).rsplit(".", 1)[-1]
            if name in CONTEXT_MANAGERS and item.optional_vars is None:
                # the header becomes `if True:`, keeping the body's lines and indentation
                start, end = node.lineno - 1, node.body[0].lineno - 1
                header = lines[start]
                indent = header[: len(header) - len(header.lstrip())]
                if end - start != 1 or not header.rstrip().endswith(":"):
                    continue
                new_lines = list(lines)
                new_lines[start] = f"{indent}if True:\n"
                yield "remove-context", node.lineno, f"run the block without `with {ast.unparse(item.context_expr)}`", "".join(new_lines)


def _call_mutants(lines, statement, call: ast.Call):
    name = _call_name(call)
    line = call.lineno
    shown = edits.segment(lines, call)
    # unwrap a transform: jax.jit(f) -> f, torch.compile(model) -> model, jax.vmap(f)(x) -> f(x)
    if _is_transform(call.func) and call.args:
        yield "unwrap-transform", line, f"{_dotted(call.func)}(...) unwrapped in `{shown}`", edits.edit_at(
            lines, statement, call, lambda node, parent, slot: edits.replace_in_parent(parent, slot, node.args[0]))
    # remove a cast: x.astype(t) -> x, tf.cast(x, t) -> x, x.to(torch.bfloat16) -> x
    if isinstance(call.func, ast.Attribute) and name in CAST_METHODS and _looks_like_cast(call):
        yield "remove-cast", line, f"no .{name}(...) in `{shown}`", edits.edit_at(
            lines, statement, call, lambda node, parent, slot: edits.replace_in_parent(parent, slot, node.func.value))
    if name in CAST_FUNCTIONS and call.args:
        yield "remove-cast", line, f"no {_dotted(call.func)}(...) in `{shown}`", edits.edit_at(
            lines, statement, call, lambda node, parent, slot: edits.replace_in_parent(parent, slot, node.args[0]))
    if name in GRADIENT_STOPS:
        inner = call.func.value if isinstance(call.func, ast.Attribute) and not call.args else (call.args[0] if call.args else None)
        if inner is not None:
            yield "remove-stop-gradient", line, f"no {name} in `{shown}`", edits.edit_at(
                lines, statement, call, lambda node, parent, slot: edits.replace_in_parent(
                    parent, slot, node.func.value if isinstance(node.func, ast.Attribute) and not node.args else node.args[0]))
    if name in CONTROL_FLOW and len(call.args) >= 3 and isinstance(call.func, ast.Attribute):  # torch.cond, lax.cond, tf.cond
        yield "python-control-flow", line, f"a Python if for {_dotted(call.func)} in `{shown}`", edits.edit_at(
            lines, statement, call, lambda node, parent, slot: edits.replace_in_parent(parent, slot, edits.python_if(node, _dotted(node.func).startswith("torch"))))
    dotted = _dotted(call.func)
    loop = loops.structured_loop(dotted) if isinstance(call.func, ast.Attribute) else None
    if loop is not None and loops.loop_parts(call, loop[0]) is not None:
        kind, framework = loop
        yield "python-loop", line, f"a Python loop for {dotted} in `{shown}`", edits.edit_at(
            lines, statement, call, lambda node, parent, slot: edits.replace_in_parent(
                parent, slot, loops.python_loop(kind, framework, *loops.loop_parts(node, kind))))
    for suffix, (flag, default) in SWITCH_DEFAULTS.items():
        if dotted.endswith(suffix) and all(keyword.arg != flag for keyword in call.keywords):
            yield "flip-mechanism-flag", line, f"{flag}={not default} added to `{shown}`", edits.edit_at(
                lines, statement, call, lambda node, parent, slot, flag=flag, default=default: edits.add_keyword(node, flag, not default))
    if name == "device_put" and len(call.args) >= 2:
        yield "single-device", line, f"device_put without its sharding in `{shown}`", edits.edit_at(
            lines, statement, call, lambda node, parent, slot: edits.truncate_args(node, 1))
    for index, keyword in enumerate(call.keywords):
        if keyword.arg is None:
            continue
        value = keyword.value
        if keyword.arg in MECHANISM_FLAGS:
            yield "drop-mechanism-flag", line, f"drop {keyword.arg}= from `{shown}`", edits.edit_at(
                lines, statement, call, lambda node, parent, slot, index=index: edits.drop_keyword(node, index))
        elif keyword.arg in MECHANISM_SWITCHES and isinstance(value, ast.Constant) and isinstance(value.value, bool):
            yield "flip-mechanism-flag", line, f"{keyword.arg}={not value.value} in `{shown}`", edits.edit_at(
                lines, statement, call, lambda node, parent, slot, index=index: edits.flip_keyword(node, index))
        elif keyword.arg in SAFETY_FLAGS and isinstance(value, ast.Constant) and isinstance(value.value, bool):
            yield "flip-safety", line, f"{keyword.arg}={not value.value} in `{shown}`", edits.edit_at(
                lines, statement, call, lambda node, parent, slot, index=index: edits.flip_keyword(node, index))
        elif keyword.arg in AXIS_KEYWORDS:
            swapped = edits.swap_axis(value)
            if swapped is not None:
                yield "axis", line, f"{keyword.arg}={ast.unparse(swapped)} for {keyword.arg}={ast.unparse(value)} in `{shown}`", edits.edit_at(
                    lines, statement, call, lambda node, parent, slot, index=index, swapped=swapped: edits.set_keyword(node, index, swapped))
        else:
            if isinstance(value, ast.Constant) and isinstance(value.value, bool):
                continue  # flip-bool covers it
            yield "drop-keyword", line, f"drop {keyword.arg}={edits.segment(lines, value)} from `{shown}`", edits.edit_at(
                lines, statement, call, lambda node, parent, slot, index=index: edits.drop_keyword(node, index))
    if name in AXIS_FUNCTIONS:
        first = 0 if isinstance(call.func, ast.Attribute) and not _module_like(call.func.value) else 1
        for index, arg in enumerate(call.args):
            if index >= first and edits.swap_axis(arg) is not None and isinstance(arg, ast.Constant | ast.UnaryOp):
                swapped = edits.swap_axis(arg)
                yield "axis", line, f"axis {ast.unparse(swapped)} for {ast.unparse(arg)} in `{shown}`", edits.edit_at(
                    lines, statement, call, lambda node, parent, slot, index=index, swapped=swapped: edits.set_arg(node, index, swapped))


def _module_like(node: ast.AST) -> bool:
    """`torch` in torch.sum(x, 1), `jnp` in jnp.sum(x, 1), `F`, `tf.math`, `keras.ops`: a namespace, not data."""
    name = _dotted(node)
    return bool(name) and name.split(".")[0] in {"torch", "jnp", "np", "numpy", "jax", "tf", "keras", "F", "ops", "lax", "nn", "K", "math", "tnp"}


def _looks_like_cast(call: ast.Call) -> bool:
    name = _call_name(call)
    if name in {"half", "float", "double", "bfloat16"}:
        return not call.args and not call.keywords
    if name == "astype":
        return bool(call.args)
    if name in {"to", "type"}:  # .to(torch.float16), .to(dtype=...), not .to(device)
        values = list(call.args) + [k.value for k in call.keywords if k.arg == "dtype"]
        return any(_dotted(v).rsplit(".", 1)[-1] in DTYPE_NAMES or (isinstance(v, ast.Constant) and v.value in DTYPE_NAMES) for v in values)
    return False


def _name_mutants(lines, statement, node):
    name = node.attr if isinstance(node, ast.Attribute) else node.id
    if name not in SIBLINGS or (isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load)):
        return
    if isinstance(node, ast.Name) and name in {"sum", "max", "min", "all", "any", "round"}:
        return  # Python's builtins, not the framework's function
    other = SIBLINGS[name]
    operator = "dtype" if name in DTYPE_NAMES else "sibling"
    text = edits.segment(lines, node)

    def change(copied, parent, slot, other=other):
        if isinstance(copied, ast.Attribute):
            copied.attr = other
        else:
            copied.id = other
        return True

    yield operator, node.lineno, f"{other} for {name} in `{text}`", edits.edit_at(lines, statement, node, change)


def _constant_mutants(lines, statement, node: ast.Constant):
    value = node.value
    if isinstance(value, bool):
        yield "flip-bool", node.lineno, f"{not value} for {value} at `{edits.segment(lines, statement)}`", edits.edit_at(
            lines, statement, node, lambda copied, parent, slot: edits.set_constant(copied, not value))
    elif isinstance(value, str) and value in DTYPE_NAMES:
        other = SIBLINGS[value]
        yield "dtype", node.lineno, f"'{other}' for '{value}' at `{edits.segment(lines, statement)}`", edits.edit_at(
            lines, statement, node, lambda copied, parent, slot: edits.set_constant(copied, other))
    elif isinstance(value, str) and value in STRING_SIBLINGS:
        other = STRING_SIBLINGS[value]
        yield "sibling", node.lineno, f"'{other}' for '{value}' at `{edits.segment(lines, statement)}`", edits.edit_at(
            lines, statement, node, lambda copied, parent, slot: edits.set_constant(copied, other))
    elif isinstance(value, int | float) and not isinstance(value, bool):
        new = value + 1 if isinstance(value, int) else (value * 10 if value else 1.0)
        yield "constant", node.lineno, f"{new!r} for {value!r} at `{edits.segment(lines, statement)}`", edits.edit_at(
            lines, statement, node, lambda copied, parent, slot: edits.set_constant(copied, new))


def _settings(tree, lines):
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and _call_name(node.value) in SETTING_CALLS:
            yield "delete-setting", node.lineno, f"without `{edits.segment(lines, node)}`", edits.replace_span(lines, node, "pass")


def _deletions(tree, lines):
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and _call_name(node.value) in SETTING_CALLS:
            continue  # delete-setting
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) or isinstance(node, ast.AugAssign):
            yield "delete-call", node.lineno, f"delete `{edits.segment(lines, node)}`", edits.replace_span(lines, node, "pass")


def _swaps(tree, lines, defined_before):
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        defined = set(defined_before) | edits.assigned_before(tree, body[0]) if body else set()
        for first, second in zip(body, body[1:], strict=False):
            simple = (ast.Assign, ast.AugAssign, ast.Expr)
            if not (isinstance(first, simple) and isinstance(second, simple)):
                continue
            if first.end_lineno >= second.lineno:  # on one line: leave it
                continue
            reads_first, writes_first = edits.reads_writes(first)
            reads, writes = edits.reads_writes(second)
            if reads & writes_first - defined:  # the second would read a name before it exists: a NameError proves little
                defined |= writes_first
                continue
            defined |= writes_first
            calls = isinstance(first, ast.Expr) and isinstance(second, ast.Expr)  # zero_grad(), backward(), step()
            if not (calls or writes_first & (reads | writes) or reads_first & writes):
                continue  # independent statements: the swap changes nothing
            a, b = edits.statement_text(lines, first), edits.statement_text(lines, second)
            if a is None or b is None or a[1] != b[1]:
                continue
            new_lines = list(lines)
            span_a = lines[first.lineno - 1 : first.end_lineno]
            span_b = lines[second.lineno - 1 : second.end_lineno]
            between = lines[first.end_lineno : second.lineno - 1]
            new_lines[first.lineno - 1 : second.end_lineno] = span_b + between + span_a
            yield "swap-statements", first.lineno, f"`{edits.segment(lines, second)}` before `{edits.segment(lines, first)}`", "".join(new_lines)


