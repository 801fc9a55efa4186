"""The names the mutation operators know: sibling functions a reader confuses, axis keywords and the
functions that take an axis, transforms, flags, casts and context managers that carry a mechanism."""

from __future__ import annotations

# Sibling functions and attributes a reader confuses: each name maps to the wrong one tried in its place.
SIBLINGS = {
    "isnan": "isinf", "isinf": "isnan", "isfinite": "isnan", "isposinf": "isneginf", "isneginf": "isposinf",
    "argmax": "argmin", "argmin": "argmax", "max": "min", "min": "max", "amax": "amin", "amin": "amax",
    "maximum": "minimum", "minimum": "maximum", "nanmax": "nanmin", "nanmin": "nanmax",
    "reduce_max": "reduce_min", "reduce_min": "reduce_max", "reduce_sum": "reduce_mean", "reduce_mean": "reduce_sum",
    "reduce_any": "reduce_all", "reduce_all": "reduce_any", "reduce_prod": "reduce_sum",
    "sum": "mean", "mean": "sum", "nansum": "nanmean", "nanmean": "nansum", "prod": "sum",
    "cumsum": "cumprod", "cumprod": "cumsum", "any": "all", "all": "any",
    "zeros": "ones", "ones": "zeros", "zeros_like": "ones_like", "ones_like": "zeros_like", "zeros_": "ones_",
    "softmax": "log_softmax", "log_softmax": "softmax", "relu": "gelu", "gelu": "relu", "silu": "relu",
    "sigmoid": "tanh", "tanh": "sigmoid", "exp": "expm1", "log": "log1p", "log1p": "log", "expm1": "exp",
    "floor": "ceil", "ceil": "floor", "round": "floor", "sin": "cos", "cos": "sin",
    "tril": "triu", "triu": "tril", "less": "greater", "greater": "less", "less_equal": "greater_equal",
    "greater_equal": "less_equal", "lt": "gt", "gt": "lt", "le": "ge", "ge": "le",
    "add": "subtract", "subtract": "add", "multiply": "divide", "divide": "multiply",
    "concatenate": "stack", "concat": "stack", "stack": "concatenate", "cat": "stack", "hstack": "vstack", "vstack": "hstack",
    "sort": "argsort", "argsort": "sort", "std": "var", "var": "std",
    "eval": "train", "train": "eval", "matmul": "multiply", "dot": "multiply",
    "float32": "float64", "float64": "float32", "float16": "bfloat16", "bfloat16": "float16",
    "int32": "int64", "int64": "int32", "int8": "uint8", "uint8": "int8",
}
# String options with a sibling that a reader (or another framework's default) would pass instead.
STRING_SIBLINGS = {
    "left": "right", "right": "left", "mean": "sum", "sum": "mean", "none": "mean", "ij": "xy", "xy": "ij",
    "SAME": "VALID", "VALID": "SAME", "same": "valid", "valid": "same", "forward": "backward", "backward": "forward",
    "ortho": "backward", "channels_last": "channels_first", "channels_first": "channels_last", "tanh": "none",
    "max": "min", "min": "max", "reflect": "constant", "constant": "reflect", "nearest": "bilinear",
    "bilinear": "nearest", "linear": "nearest", "L": "U", "U": "L", "reduced": "complete", "complete": "reduced",
}
DTYPE_NAMES = {"float32", "float64", "float16", "bfloat16", "int32", "int64", "int8", "uint8"}
AXIS_KEYWORDS = {"axis", "dim", "dims", "axes", "dimension"}
AXIS_SWAP = {0: 1, 1: 0, -1: 0, 2: 1, -2: -1, 3: 2, -3: -2}
# calls whose int positional arguments past the data are axes: x.sum(1), torch.cat(xs, 1), F.softmax(x, -1)
AXIS_FUNCTIONS = {
    "sum", "mean", "max", "min", "amax", "amin", "argmax", "argmin", "prod", "std", "var", "cumsum", "cumprod",
    "softmax", "log_softmax", "cat", "concat", "concatenate", "stack", "squeeze", "unsqueeze", "expand_dims",
    "flip", "roll", "sort", "argsort", "topk", "norm", "all", "any", "logsumexp", "unbind", "split", "chunk",
    "take_along_axis", "take", "gather", "index_select", "median", "nansum", "nanmean", "count_nonzero",
    "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_any", "reduce_all", "one_hot",
}
TRANSFORMS = {"jit", "function", "compile", "vmap", "pmap", "checkpoint", "remat", "filter_jit", "vectorized_map", "pjit",
              "shard_map", "make_jaxpr", "make_fx", "aot_function", "grad", "value_and_grad", "jacrev", "jacfwd", "hessian",
              "recompute_grad"}
# transforms also imported bare (`from torch.func import vmap`); not `compile` or `function`, which name other things
BARE_TRANSFORMS = TRANSFORMS - {"compile", "function", "checkpoint"}
# transforms removed only where they decorate: `@nnx.scan(...)` (the call form makes a function from
# arguments a plain call could not take)
DECORATOR_TRANSFORMS = {"custom_vjp", "custom_jvp", "custom_gradient", "scan"}
# structured loops that the Python loop a reader writes instead replaces (loops.python_loop)
STRUCTURED_LOOPS = {"scan", "foldl"}
# flags choosing between two implementations: the mutant takes the other one (torch.onnx.export's
# exporter; dropping `dynamo=True` changes nothing where it is the default)
MECHANISM_SWITCHES = {"dynamo"}
# ...and where such a flag is left at its default: the call (by its dotted name's end) -> (flag, default);
# the mutant passes the other value
SWITCH_DEFAULTS = {"onnx.export": ("dynamo", True)}
MECHANISM_FLAGS = {"jit_compile", "fullgraph", "donate_argnums", "donate_argnames", "reduce_retracing", "experimental_relax_shapes",
                   "requires_grad"}
# calls that set how later code runs (a mesh, a policy, determinism, a default device): deleting one is a mechanism mutant
SETTING_CALLS = {"set_distribution", "set_global_policy", "set_dtype_policy", "use_deterministic_algorithms", "set_default_device",
                 "run_functions_eagerly", "set_default_dtype", "enable_op_determinism", "fully_shard", "set_mesh",
                 "set_floatx", "enable_x64", "disable_eager_execution", "enable_eager_execution", "eval"}
# structured control flow and the Python a reader writes instead: cond(pred, true_fn, false_fn, operands...)
CONTROL_FLOW = {"cond"}
SAFETY_FLAGS = {"weights_only", "safe_mode", "allow_pickle", "strict"}
CAST_METHODS = {"astype", "half", "float", "double", "bfloat16", "to", "type"}
CAST_FUNCTIONS = {"cast", "convert_element_type"}
GRADIENT_STOPS = {"stop_gradient", "detach", "detach_"}
CONTEXT_MANAGERS = {"scope", "autocast", "no_grad", "inference_mode", "enable_grad", "set_grad_enabled", "device", "default_device",
                    "name_scope", "named_scope", "use_mesh", "set_mesh", "sharding", "policy", "ensure_compile_time_eval"}
