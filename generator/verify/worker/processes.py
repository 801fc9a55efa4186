"""The worker's processes: dying with the parent, reaping what cells leave behind, killing a cell's
process group, measuring its memory, and whether forking is still safe."""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
_libc = ctypes.CDLL(None, use_errno=True)


def die_with_parent() -> None:
    """SIGKILL this process when its parent dies."""
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def become_subreaper() -> None:
    """Processes a cell leaves behind are re-parented to this one (not to init): found and killed."""
    _libc.prctl(PR_SET_CHILD_SUBREAPER, 1)


def fork_unsafe_reason() -> str:
    """Why forking this process now would be unsafe ('' when it is safe): threads (a fork copies
    only the calling one, with whatever locks the others held) or an initialised GPU runtime."""
    try:
        threads = len(os.listdir("/proc/self/task"))
    except OSError:
        threads = 1
    if threads > 1:
        return f"the lane worker holds {threads} threads"
    torch = sys.modules.get("torch")
    if torch is not None and getattr(torch, "cuda", None) is not None and torch.cuda.is_initialized():
        return "the lane worker has initialised CUDA (torch)"
    bridge = sys.modules.get("jax._src.xla_bridge")
    if bridge is not None and getattr(bridge, "_backends", None):
        return "the lane worker has started a JAX backend"
    return ""


def describe_exit(status) -> str:
    if status is None:
        return "the cell process vanished"
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"the cell process was killed by {name}"
    code = os.WEXITSTATUS(status)
    return f"the cell process exited with status {code} before the cell finished (os._exit or a native exit)"


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _proc_stats(pids=None):
    """Yield (pid, ppid, pgrp, rss_pages) for these processes (default: every process); a process
    that has gone is left out."""
    if pids is None:
        pids = (int(name) for name in os.listdir("/proc") if name.isdigit())
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        yield pid, int(fields[1]), int(fields[2]), int(fields[21])


def rss_by_group() -> dict[int, int]:
    page = os.sysconf("SC_PAGE_SIZE")
    usage: dict[int, int] = {}
    for _, _, pgrp, rss in _proc_stats():
        usage[pgrp] = usage.get(pgrp, 0) + rss * page
    return usage


def kill_orphans(keep: set[int]) -> None:
    """Kill processes a finished cell left behind: they were re-parented to this subreaper."""
    for pid, pgrp in _children():
        if pid not in keep and pgrp not in keep:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _children():
    """Yield (pid, pgrp) of this process's children: from /proc/self/task/*/children (a read per
    thread, 3 ms a cell less than a scan of every process), or by that scan where the kernel lacks it."""
    me = os.getpid()
    try:
        pids = set()
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/children", "rb") as handle:
                pids.update(int(pid) for pid in handle.read().split())
    except OSError:
        yield from ((pid, pgrp) for pid, ppid, pgrp, _ in _proc_stats() if ppid == me)
        return
    yield from ((pid, pgrp) for pid, _, pgrp, _ in _proc_stats(pids))


def remove_tree(path: str) -> None:
    for root, dirs, files in os.walk(path, topdown=False):
        for name in files:
            try:
                os.unlink(os.path.join(root, name))
            except OSError:
                pass
        for name in dirs:
            full = os.path.join(root, name)
            try:
                if os.path.islink(full):
                    os.unlink(full)
                else:
                    os.rmdir(full)
            except OSError:
                pass
    try:
        os.rmdir(path)
    except OSError:
        pass
