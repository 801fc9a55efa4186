"""Lanes: the worker configurations cells run in.

A lane names the modules its worker imports once, the environment it runs with, what runs in the
worker after the imports (`prelude`, which must not start a framework runtime: the worker forks a
fresh process per cell) and how many processes one cell runs in. Lanes with the same imports,
environment and prelude share one worker process.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

# One thread per cell process: the scheduler already runs one cell per core, and oversubscribed
# thread pools make every cell slower.
_SINGLE_THREAD = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "TF_NUM_INTRAOP_THREADS": "1",
    "TF_NUM_INTEROP_THREADS": "1",
}
# Compile caches (their folders are the runner's) keep what a lane's cells compile between cells
# and builds. By default JAX keys its cache without metadata, so a cell got another cell's
# executable with the other's op names (a named_scope check failed or passed depending on which
# cell compiled first): metadata joins the key. JAX also writes the Python stack of every operation
# into that metadata (source frames, up to 100 by default), which made each executable unique to the
# cell line that called it: `jnp.ones(2) + 1` compiled anew in every cell. With no frames an
# executable is shared exactly when the computation and its op names (named scopes, jit names) are
# equal: JAX lanes cold, one core, 409 -> 266 s of CPU, every cell passing. What a reader sees
# differently: compiled HLO text (`.compile().as_text()`) has op names but no `stack_frame_id`s,
# and profiles no source lines.
_COMPILE_CACHE_ENV = {
    "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
    "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
    "JAX_COMPILATION_CACHE_INCLUDE_METADATA_IN_KEY": "true",
    "JAX_TRACEBACK_IN_LOCATIONS_LIMIT": "0",
    # Inductor's precompiled header is checked by preprocessing torch's C++ headers once per
    # process (memoised in memory only): 10 s in every forked cell that compiles, even when the
    # kernel's .so is already in the cache. Without it a cached kernel loads at once and a new
    # one compiles in about half the time here. The generated code is the same.
    "TORCHINDUCTOR_CPP_CACHE_PRECOMPILE_HEADERS": "0",
}
_TF_ENV = {"TF_CPP_MIN_LOG_LEVEL": "2", "TF_ENABLE_ONEDNN_OPTS": "0"}
# Modules every JAX cell imports at its first lowering (the MHLO dialect's Python bindings: 25 ms
# of a 95 ms first `jnp.ones(2) + 1` in a forked cell). They start no thread and raise no warning,
# so importing them once in the worker changes nothing a cell can see but its time. Optional: a
# jaxlib without MHLO simply lowers without it.
_JAX_PRELOAD = ("jaxlib.mlir.dialects.mhlo",)
_JAX_ENV = {
    "JAX_PLATFORMS": "cpu",
    "XLA_FLAGS": "--xla_force_host_platform_device_count=8 --xla_cpu_multi_thread_eigen=false",
}


@dataclass(frozen=True)
class Lane:
    name: str
    imports: tuple[str, ...]
    packages: tuple[str, ...]
    env: dict = field(default_factory=dict)
    prelude: str = ""
    processes: int = 1
    device: str = "cpu"
    # imported by the worker only where installed: Keras imports TensorFlow for serialisation and
    # seeding when it is there, but a CUDA image often has no TensorFlow
    optional_imports: tuple[str, ...] = ()
    # the imports `new-row` puts in a placeholder cell of this lane (not part of the cache key)
    skeleton: str = ""

    @property
    def default_device(self) -> str:
        """The device each cell starts with as PyTorch's default (torch.set_default_device): the GPU
        in the PyTorch lanes on a GPU, else none (Keras places its own tensors)."""
        torch_lane = "torch" in self.imports and "keras" not in self.imports
        return self.device if torch_lane and self.device != "cpu" else ""

    @property
    def worker_key(self) -> str:
        """Lanes with equal keys share one worker process."""
        env = ",".join(f"{k}={v}" for k, v in sorted(self.env.items()))
        return f"{'+'.join(self.imports)}|{'+'.join(self.optional_imports)}|{env}|{self.prelude}|{self.device}"


_KERAS_SKELETON = "import keras\nfrom keras import layers, ops"


def _keras(
    backend: str, backend_imports: tuple[str, ...], backend_packages: tuple[str, ...], env: dict, preload: tuple[str, ...] = ()
) -> Lane:
    # Keras imports TensorFlow whenever it is installed and a cell serialises a model or seeds
    # the RNGs (keras.utils.set_random_seed, .keras files, get_config): 5-15 s a cell on every
    # backend. Importing it once in the worker makes that free, where it is installed; on the
    # other backends it is optional (a CUDA image has PyTorch and JAX, rarely TensorFlow).
    optional: tuple[str, ...] = preload
    if "tensorflow" not in backend_imports:
        optional += ("tensorflow",)
        backend_packages += ("tensorflow-cpu",)
    return Lane(
        name=f"keras@{backend}",
        imports=backend_imports + ("keras",),
        packages=("keras",) + backend_packages + ("numpy",),
        env={**_TF_ENV, **env, "KERAS_BACKEND": backend},
        optional_imports=optional,
        skeleton=_KERAS_SKELETON,
    )


_LANES = (
    Lane("python", ("numpy",), ("numpy",), skeleton="import numpy as np"),
    Lane("torch", ("torch", "torch._dynamo"), ("torch", "numpy"), skeleton="import torch\nfrom torch import nn"),
    Lane(
        "torch-dist",
        ("torch", "torch._dynamo"),
        ("torch", "numpy"),
        processes=2,
        skeleton="import torch\nimport torch.distributed as dist\ndist.init_process_group('gloo')",
    ),
    Lane(
        "jax",
        ("jax", "jax.numpy", "flax", "flax.nnx", "optax"),
        ("jax", "jaxlib", "flax", "optax", "numpy"),
        env=_JAX_ENV,
        optional_imports=_JAX_PRELOAD,
        skeleton="import jax\nimport jax.numpy as jnp\nfrom flax import nnx\nimport optax",
    ),
    Lane("tensorflow", ("tensorflow",), ("tensorflow-cpu", "numpy"), env=_TF_ENV, skeleton="import tensorflow as tf"),
    Lane(
        "tf1",
        ("tensorflow",),
        ("tensorflow-cpu", "numpy"),
        env=_TF_ENV,
        prelude="import tensorflow as _tf\n_tf.compat.v1.disable_eager_execution()\ndel _tf\n",
        skeleton="import tensorflow.compat.v1 as tf",
    ),
    _keras("jax", ("jax",), ("jax", "jaxlib"), _JAX_ENV, _JAX_PRELOAD),
    _keras("torch", ("torch",), ("torch",), {}),
    _keras("tensorflow", ("tensorflow",), ("tensorflow-cpu",), _TF_ENV),
    Lane("pytensor", ("pytensor", "pytensor.tensor"), ("pytensor", "numpy"), skeleton="import pytensor\nimport pytensor.tensor as pt"),
)
class LaneTable(Mapping):
    """The lanes by name, read-only. A 'LANE:DEVICE' name (e.g. 'torch:cuda') is the lane as it runs
    on that device, made when asked for and never stored: the table is the same, whatever was read
    from it (it used to grow as device lanes were read, so its length depended on test order)."""

    def __init__(self, lanes):
        self._lanes = {lane.name: lane for lane in lanes}

    def __getitem__(self, name: str) -> Lane:
        if name in self._lanes:
            return self._lanes[name]
        base, _, device = name.partition(":")
        if not device or base not in self._lanes:
            raise KeyError(name)
        try:
            return on_device(self._lanes[base], device)
        except ValueError:  # a lane that cannot run there: no such name
            raise KeyError(name) from None

    def __iter__(self):
        return iter(self._lanes)

    def __len__(self) -> int:
        return len(self._lanes)

    def __contains__(self, name) -> bool:  # content may name only the base lanes
        return name in self._lanes


LANES: Mapping[str, Lane] = LaneTable(_LANES)

# Lanes that can use an NVIDIA GPU, and how their environment changes there.
GPU_LANES = ("torch", "torch-dist", "jax", "keras@jax", "keras@torch")
# JAX: the GPU is the default device, and the CPU is there as well, as on a GPU machine where
# JAX_PLATFORMS is unset (host callbacks such as jax.debug.print need it); naming cuda still makes
# JAX fail loudly, rather than fall back to the CPU, when the GPU cannot start.
_GPU_ENV = {"JAX_PLATFORMS": "cuda,cpu", "XLA_FLAGS": "", "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
# `torch.cuda.is_available()` (which `import keras` calls on the torch backend) initialises the
# CUDA driver unless asked to use NVML instead; a driver initialised in the worker poisons every
# cell forked from it ("Cannot re-initialize CUDA in forked subprocess").
_TORCH_GPU_ENV = {"PYTORCH_NVML_BASED_CUDA_CHECK": "1"}


def base_env(lane: Lane) -> dict:
    """The lane's environment before the worker adds PATH, HOME and the like."""
    return {**_SINGLE_THREAD, **_COMPILE_CACHE_ENV, **lane.env}


def on_device(lane: Lane, device: str) -> Lane:
    """The lane as it runs on `device` ('cpu' or 'cuda')."""
    if device == "cpu":
        return lane
    if lane.name not in GPU_LANES:
        raise ValueError(f"lane '{lane.name}' cannot run on {device}")
    env = dict(lane.env)
    if "jax" in lane.imports:  # several cell processes share the GPU: no up-front allocation
        env.update(_GPU_ENV)
    if "torch" in lane.imports:
        env.update(_TORCH_GPU_ENV)
    env = {k: v for k, v in env.items() if v}
    return replace(lane, name=f"{lane.name}:{device}", env=env, device=device)

