"""The sandbox lane workers run in: contributed code must not reach what builds the site.

Cells arrive in pull requests and run on the machine that builds the published site. Each lane worker
(and so every cell it forks) starts inside bubblewrap (`bwrap`, Debian's `bubblewrap`), which gives it:

- a mount namespace in which the whole file system is read-only — the checkout, the virtual
  environment, the system — except the run's scratch folder, the lane's home (its compile caches)
  and a private, empty `/tmp`; the checkout's `.git` is hidden;
- a PID namespace with a fresh `/proc`: no ancestor (the build, the CI runner) is visible, so neither
  its working directory nor its environment can be read;
- a network namespace with only the loopback device (the gloo processes of `torch-dist` talk over
  it; nothing else is reachable), and IPC and UTS namespaces of its own;
- no capabilities (`--cap-drop ALL`, which also keeps a root build's cells from remounting anything
  writable) and death with its parent.

Where bwrap is missing or cannot make namespaces (an unprivileged user where the kernel forbids user
namespaces), the policy decides: `auto` runs unsandboxed and says so, `require` refuses to run a cell,
`off` does not try. CI requires it (docs/sandbox.md says which protection holds where). The build
keeps a second line of defence that needs no sandbox: `integrity.py` refuses to render when a file
it reads after verification changed while cells ran.
"""

from __future__ import annotations

import functools
import glob
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass

POLICIES = ("auto", "require", "off")
# the checkout's git folder (or a worktree's .git file): hidden from cells, with whatever it holds
REPOSITORY = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REPOSITORY_GIT = os.path.join(REPOSITORY, ".git")


class SandboxUnavailable(RuntimeError):
    """The policy requires the sandbox and this machine cannot give it."""


@dataclass(frozen=True)
class Sandbox:
    """How lane workers are started: inside bwrap (`program` set) or, failing that, as they are."""

    program: str | None  # the bwrap executable, or None: no sandbox
    reason: str = ""  # why there is none (empty when there is one)

    @property
    def active(self) -> bool:
        return self.program is not None

    def wrap(self, argv: list[str], *, writable: tuple[str, ...], hidden: tuple[str, ...] = (), devices: tuple[str, ...] = ()) -> list[str]:
        """`argv` as it runs in the sandbox: `writable` folders bound read-write at their own paths,
        `hidden` paths (a folder or a file) replaced by an empty one, `devices` (device files or
        folders of them, e.g. /dev/nvidia0) passed through."""
        if self.program is None:
            return list(argv)
        return [self.program, *bwrap_arguments(writable=writable, hidden=hidden, devices=devices), "--", *argv]


def needed() -> tuple[str, ...]:
    """What a worker reads that the private /tmp would hide were it there (a checkout or a virtual
    environment under /tmp): the repository and the interpreter's prefixes, bound back read-only."""
    paths = {os.path.realpath(p) for p in (REPOSITORY, sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable)))}
    return tuple(sorted(p for p in paths if p.startswith("/tmp/")))


def bwrap_arguments(*, writable: tuple[str, ...], hidden: tuple[str, ...] = (), devices: tuple[str, ...] = ()) -> list[str]:
    """bwrap's options for a worker. Order matters: later mounts go on top of earlier ones."""
    args = [
        "--ro-bind", "/", "/",  # everything, read-only (recursively: every mount below / too)
        "--dev", "/dev",  # a minimal /dev: null, zero, random, urandom, tty, shm, pts
        "--proc", "/proc",  # this PID namespace's processes only
        "--tmpfs", "/tmp",  # a private, empty /tmp
    ]  # fmt: skip
    for path in needed():  # a checkout or a virtual environment under /tmp: back, read-only
        args += ["--ro-bind", path, path]
    for path in devices:
        args += ["--dev-bind", path, path]
    for path in hidden:
        if os.path.isdir(path):
            args += ["--tmpfs", path]
        elif os.path.exists(path):
            args += ["--ro-bind", "/dev/null", path]
    for path in writable:
        args += ["--bind", path, path]
    args += [
        "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
        "--cap-drop", "ALL",
        "--die-with-parent",
        "--new-session",  # no controlling terminal to push keystrokes into (TIOCSTI)
    ]  # fmt: skip
    return args


def gpu_devices() -> tuple[str, ...]:
    """The NVIDIA device files a GPU lane's worker needs (the driver's control, UVM and GPU nodes)."""
    return tuple(sorted(glob.glob("/dev/nvidia*")) + sorted(glob.glob("/dev/dri")))


def default_policy(environ=None) -> str:
    """The policy when none is given: MLSHEETS_SANDBOX if set, else `require` under CI, else `auto`."""
    environ = os.environ if environ is None else environ
    chosen = environ.get("MLSHEETS_SANDBOX", "").strip().lower()
    if chosen:
        if chosen not in POLICIES:
            raise ValueError(f"MLSHEETS_SANDBOX={chosen!r}: expected one of {', '.join(POLICIES)}")
        return chosen
    return "require" if environ.get("CI", "").lower() == "true" else "auto"


def resolve(policy: str | None = None) -> Sandbox:
    """The sandbox this run gets under `policy` (default: `default_policy()`); raises
    SandboxUnavailable when the policy requires one that cannot be had."""
    policy = policy or default_policy()
    if policy not in POLICIES:
        raise ValueError(f"sandbox policy {policy!r}: expected one of {', '.join(POLICIES)}")
    if policy == "off":
        return Sandbox(None, "switched off (--sandbox off)")
    program, reason = probe()
    if program is None and policy == "require":
        raise SandboxUnavailable(
            f"the sandbox is required (--sandbox require, MLSHEETS_SANDBOX or CI=true) but cannot be used: {reason}. "
            "Install bubblewrap (apt-get install bubblewrap; see docs/sandbox.md)"
        )
    return Sandbox(program, reason)


@functools.cache
def probe(program: str | None = None) -> tuple[str | None, str]:
    """(the bwrap executable, '') when a sandbox of the kind workers get starts here, else (None, why).
    Run once per process: it starts bwrap with the workers' options and checks what it sees inside."""
    program = program or shutil.which("bwrap")
    if program is None:
        return None, "bubblewrap (bwrap) is not installed"
    scratch = os.path.realpath(os.environ.get("TMPDIR") or "/tmp")
    # inside: the system read-only, the scratch folder writable, and PID 1 the sandbox's own
    inside = 'test ! -w /usr && test -w "$1" && grep -q bwrap /proc/1/cmdline'
    argv = [program, *bwrap_arguments(writable=(scratch,)), "--", "/bin/sh", "-c", inside, "probe", scratch]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=20, env={"PATH": "/usr/bin:/bin"})
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"bwrap could not be started ({exc})"
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or ["the probe's checks failed inside it"])[-1]
        return None, f"bwrap cannot make the namespaces here ({said})"
    return program, ""
