"""On a GPU: the default device a cell starts with, the runtime's evidence of GPU work, and the
device's name, CUDA and driver versions."""

from __future__ import annotations

import sys


def use_device(job: dict) -> None:
    """Make the GPU PyTorch's default device in lanes that ask for it (the PyTorch lanes, whose
    snippets make tensors without naming a device). Never in the Keras lanes: Keras places its own
    tensors, and a default device there breaks what a Keras user runs (the CPU generator of the
    DataLoader that shuffles `fit`'s batches)."""
    torch = sys.modules.get("torch")
    if torch is not None and job.get("default_device"):
        torch.set_default_device(job["default_device"])


def device_counters() -> dict:
    """The runtime's own counters of device work, read before the cell runs."""
    counters = {}
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        counters["torch_allocations"] = int(torch.cuda.memory_stats().get("allocation.all.allocated", 0))
    return counters


def device_evidence(namespace: dict, before: dict) -> dict:
    """How the cell showed it used the GPU, from the runtimes rather than from what it left behind:
    the CUDA caching allocator's allocations during the cell (PyTorch), the live arrays and the
    namespace's arrays on a GPU (JAX)."""
    evidence = {}
    torch = sys.modules.get("torch")
    if torch is not None and "torch_allocations" in before:
        evidence["torch_allocations"] = int(torch.cuda.memory_stats().get("allocation.all.allocated", 0)) - before["torch_allocations"]
    jax = sys.modules.get("jax")
    if jax is not None:
        try:
            live = [a for a in jax.live_arrays() if any(d.platform in ("gpu", "cuda") for d in a.devices())]
            evidence["jax_live_arrays"] = len(live)
        except Exception:  # noqa: BLE001 - no backend: no evidence
            pass
    evidence["namespace_arrays"] = sum(
        1 for value in list(namespace.values()) for placement in _placements(value) if placement == "gpu"
    )
    return evidence


def _placements(value):
    torch = sys.modules.get("torch")
    if torch is not None:
        if isinstance(value, torch.Tensor):
            yield "gpu" if value.device.type == "cuda" else value.device.type
            return
        if isinstance(value, torch.nn.Module):
            for parameter in value.parameters():
                yield "gpu" if parameter.device.type == "cuda" else parameter.device.type
            return
    jax = sys.modules.get("jax")
    if jax is not None and isinstance(value, jax.Array):
        if value.is_deleted():  # donated to a computation: it has no buffer, and no device to ask
            return
        for dev in value.devices():
            yield "gpu" if dev.platform in ("gpu", "cuda") else dev.platform


def device_info(device: str) -> dict:
    info = {}
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        info["name"] = torch.cuda.get_device_name(0)
        info["cuda"] = torch.version.cuda
    jax = sys.modules.get("jax")
    if jax is not None and "name" not in info:
        try:
            info["name"] = jax.devices()[0].device_kind
        except Exception:  # noqa: BLE001
            pass
    try:
        with open("/proc/driver/nvidia/version", encoding="utf-8") as handle:
            driver = driver_version(handle.readline())
        if driver:
            info["driver"] = driver
    except OSError:
        pass
    return info


def driver_version(line: str) -> str:
    """The driver version in the first line of /proc/driver/nvidia/version, e.g.
    'NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build ...' -> '580.95.05'."""
    import re

    match = re.search(r"\b(\d{3,}\.\d+(?:\.\d+)?)\b", line)
    return match.group(1) if match else ""
