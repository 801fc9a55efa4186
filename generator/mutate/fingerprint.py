"""The values a cell leaves behind, as digests: how the runner decides that a mutant is equivalent.

A mutant job runs the mutant's code, then the cell's check, then FINGERPRINT (appended to the check,
in the cell's namespace). It prints one line, `@@mutation-fingerprint@@ {"name": "digest", ...}`, with a
digest of every value the namespace holds: arrays and tensors by dtype, shape and bytes (PyTorch,
JAX, TensorFlow, Keras, NumPy), modules and layers by their parameters and configuration, optimizers
by their state, functions by their code and what they close over, other objects by their attributes
(a few levels deep). A value mutant whose digests equal the original's — name by name, leaving out
the names whose digest differs between two runs of the original itself (a time, an id) — left
exactly the same values and is equivalent.
"""

from __future__ import annotations

import json

MARKER = "@@mutation-fingerprint@@"

FINGERPRINT = '''
def __mutation_fingerprint__(namespace):
    import hashlib, json, sys, types
    np = sys.modules.get("numpy")
    torch = sys.modules.get("torch")
    jax = sys.modules.get("jax")
    tf = sys.modules.get("tensorflow")
    keras = sys.modules.get("keras")
    nnx = sys.modules.get("flax.nnx")

    def array(value):
        if np is None:
            return None
        if isinstance(value, np.ndarray | np.generic):
            return np.asarray(value)
        if torch is not None and isinstance(value, torch.Tensor):
            value = value.detach().cpu()
            if value.is_sparse or value.layout != torch.strided:
                value = value.to_dense()
            if value.dtype == torch.bfloat16:
                value = value.float()
            return value.numpy()
        if jax is not None and isinstance(value, jax.Array):
            return None if value.is_deleted() else np.asarray(value)
        if tf is not None and isinstance(value, tf.Tensor | tf.Variable) and tf.executing_eagerly():
            return value.numpy()
        if keras is not None and isinstance(value, keras.Variable):
            return np.asarray(keras.ops.convert_to_numpy(value))
        return None

    import re
    # Memory addresses differ from run to run, and between an original and a mutant that allocates
    # otherwise: `0x7f...` in reprs, bare ids in text (`Captures: 140224268201488: TensorSpec(...)` in a
    # tf.function's signature, `'140167840227920_ib-0'` among a Keras model's node names), and ids kept
    # as ints. In text they are replaced as whole tokens only: a float's digits and an array digest's
    # hexadecimal are kept. Of the numbers only ints that can be an object's address are (16-aligned, in
    # the range of a 64-bit Linux process's heap and mappings, 2**44 to 2**47).
    addresses = re.compile(r"0x[0-9a-fA-F]{6,}|(?<![0-9A-Za-z.])[0-9]{12,}(?![0-9A-Za-z.])")

    def scrub(text):
        return addresses.sub("<address>", text)

    def code_text(code, depth, seen):
        # What a code object does: its bytecode, constants (nested code too) and names (`isinf` for
        # `isnan` changes only co_names). Not its file or line: the runner's file names are random.
        return f"code {code.co_name} {hashlib.sha256(code.co_code).hexdigest()} {code.co_names} {canon(code.co_consts, depth + 1, seen)}"

    def canon(value, depth, seen):
        if isinstance(value, int) and not isinstance(value, bool) and 2**44 <= value < 2**47 and value % 16 == 0:
            return "<address>"  # an id() kept as a number (Keras's Tracker keeps `stored_ids`): a heap address
        if value is None or isinstance(value, bool | int | float | complex):
            return repr(value)
        if isinstance(value, str | bytes):
            return scrub(repr(value))
        if isinstance(value, types.CodeType):
            return code_text(value, depth, seen)
        if isinstance(value, types.ModuleType):
            return "module " + value.__name__
        if id(value) in seen or depth > 5:
            return "<...>"
        seen = seen | {id(value)}
        try:
            data = array(value)
        except Exception as exc:
            data, failed = None, type(exc).__name__
        else:
            failed = ""
        if data is not None and data.dtype.hasobject:  # the bytes are pointers: read the objects
            return f"array object {data.shape} " + canon(data.ravel().tolist(), depth + 1, seen)
        if data is not None:
            data = np.ascontiguousarray(data)
            return f"array {data.dtype} {data.shape} " + hashlib.sha256(data.tobytes()).hexdigest()
        if failed:
            return f"{type(value).__name__} (unreadable: {failed})"
        if isinstance(value, list | tuple):
            return f"{type(value).__name__}[" + ", ".join(canon(v, depth + 1, seen) for v in list(value)[:2000]) + "]"
        if isinstance(value, dict):
            items = sorted(value.items(), key=lambda kv: repr(kv[0]))[:2000]
            return "{" + ", ".join(f"{scrub(repr(k))}: {canon(v, depth + 1, seen)}" for k, v in items) + "}"
        if isinstance(value, set | frozenset):
            return f"{type(value).__name__}{{" + ", ".join(sorted(canon(v, depth + 1, seen) for v in value)) + "}"
        if isinstance(value, types.FunctionType):
            closure = [canon(c.cell_contents, depth + 1, seen) if c.cell_contents is not namespace else "<namespace>"
                       for c in (value.__closure__ or ()) if _filled(c)]
            return f"function {code_text(value.__code__, depth, seen)} {canon(value.__defaults__, depth + 1, seen)} {canon(value.__kwdefaults__, depth + 1, seen)} {closure}"
        if isinstance(value, type):
            if value.__module__ != namespace.get("__name__"):
                return "class " + value.__qualname__
            # A class the cell defines: its methods are code like its functions.
            methods = {k: getattr(v, "__func__", getattr(v, "fget", v)) for k, v in vars(value).items()
                       if isinstance(v, types.FunctionType | staticmethod | classmethod | property)}
            return f"class {value.__qualname__} {[b.__qualname__ for b in value.__bases__]} " + canon(methods, depth + 1, seen)
        if torch is not None and isinstance(value, torch.nn.Module):
            return f"{scrub(repr(value))} " + canon(dict(value.state_dict()), depth + 1, seen) + canon(_attributes(value), depth + 1, seen)
        if torch is not None and isinstance(value, torch.optim.Optimizer):
            return "optimizer " + canon(value.state_dict(), depth + 1, seen)
        if keras is not None and isinstance(value, keras.layers.Layer):
            try:
                config = value.get_config()
            except Exception:
                config = None
            return f"layer {type(value).__name__} " + canon([v for v in value.weights], depth + 1, seen) + canon(config, depth + 1, seen)
        if nnx is not None and isinstance(value, nnx.Module):
            return f"nnx {type(value).__name__} " + canon(jax.tree.leaves(nnx.state(value)), depth + 1, seen) + canon(_attributes(value), depth + 1, seen)
        attributes = _attributes(value)
        if attributes:
            return f"{type(value).__name__} " + canon(attributes, depth + 1, seen)
        try:
            text = repr(value)
        except Exception:
            text = ""
        return f"{type(value).__name__} " + scrub(text[:2000])

    def _filled(cell):
        try:
            cell.cell_contents
        except ValueError:
            return False
        return True

    def _attributes(value):
        found = {}
        for name, item in list(getattr(value, "__dict__", {}).items()):
            if not name.startswith("__"):
                found[name] = item
        for name in getattr(type(value), "__slots__", ()):
            if hasattr(value, name):
                found[name] = getattr(value, name)
        return found

    digests = {}
    for name, value in list(namespace.items()):
        if name.startswith("__") or isinstance(value, types.ModuleType):
            continue
        try:
            text = canon(value, 0, frozenset())
        except Exception as exc:
            text = f"<unreadable: {type(exc).__name__}>"
        digests[name] = hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:24]
    return digests


def __mutation_print__(namespace):
    import json
    try:
        digests = __mutation_fingerprint__(namespace)
    except BaseException as exc:  # the tool's own failure: never a verdict on the mutant
        digests = {"<fingerprint failed>": repr(exc)[:200]}
    print("\\n@@mutation-fingerprint@@ " + json.dumps(digests, sort_keys=True), flush=True)


__mutation_print__(globals())
'''


def read(stdout: str) -> dict | None:
    """The digests a fingerprinted run printed, or None. A distributed cell's ranks print one line
    each, into one output in no set order: each name then holds every rank's digest, sorted."""
    found = []
    for part in stdout.split(MARKER)[1:]:
        line = part.strip().splitlines()[0] if part.strip() else ""
        try:
            digests = json.loads(line)
        except ValueError:
            return None
        if not isinstance(digests, dict):
            return None
        found.append(digests)
    if len(found) <= 1:
        return found[0] if found else None
    return {name: "|".join(sorted(str(d.get(name)) for d in found)) for name in set().union(*found)}


def stable(first: dict, second: dict) -> tuple[dict, set]:
    """From two runs of the original: the digests both agree on, and the names they disagree on."""
    names = first.keys() | second.keys()
    unstable = {name for name in names if first.get(name) != second.get(name)}
    return {name: digest for name, digest in first.items() if name not in unstable}, unstable


def same_values(reference: dict, unstable: set, mutant: dict) -> bool:
    """Whether the mutant left exactly the values of the original (names unstable in the original aside)."""
    names = (reference.keys() | mutant.keys()) - unstable
    return all(reference.get(name) == mutant.get(name) for name in names)
