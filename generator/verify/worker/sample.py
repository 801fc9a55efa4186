"""Where a cell was when it ran out of time: a sample of its Python stack, read from outside before the kill.

Runs only on the timeout path, in the worker, against the cell process about to be killed: nothing in a
cell process changes (no signal handler, no thread, no tracing), so no passing cell runs differently. It
reads the cell's memory through /proc/PID/mem, as py-spy does: the interpreter's thread states, each
thread's frames, each frame's code object and instruction. The layout of those structures is CPython
3.11's, and every offset that is not fixed by the 3.11 headers is found by probing this process's own
live objects first (a fork of the worker has the same layout); where a probe fails (another Python, a
kernel that refuses the read), there is no sample and the timeout says so.
"""

from __future__ import annotations

import ctypes
import os
import signal
import struct
import sys
import time

# _PyInterpreterFrame in 3.11 (Include/internal/pycore_frame.h): f_func, f_globals, f_builtins, f_locals,
# f_code, frame_obj, previous, prev_instr; _PyCFrame: use_tracing, current_frame; PyThreadState: prev, next
FRAME_GLOBALS, FRAME_CODE, FRAME_PREVIOUS, FRAME_INSTR = 8, 32, 48, 56
CFRAME_CURRENT, THREAD_NEXT = 8, 8
ASCII_DATA, UNICODE_LENGTH, BYTES_DATA, VAR_SIZE = 48, 16, 32, 16


def _word(read, address: int) -> int:
    return struct.unpack("<Q", read(address, 8))[0]


class _Memory:
    """Another process's memory (or this one's: /proc/self/mem, where a wrong address is an error, not a crash)."""

    def __init__(self, pid):
        self.handle = open(f"/proc/{pid}/mem", "rb", buffering=0)  # noqa: SIM115 - closed by close()

    def __call__(self, address: int, size: int) -> bytes:
        self.handle.seek(address)
        data = self.handle.read(size)
        if len(data) != size:
            raise OSError(f"short read at {address:#x}")
        return data

    def close(self) -> None:
        self.handle.close()


def _find(haystack: bytes, value: int, fmt: str = "<Q") -> int:
    needle = struct.pack(fmt, value)
    for offset in range(0, len(haystack) - len(needle) + 1, struct.calcsize(fmt)):
        if haystack[offset : offset + len(needle)] == needle:
            return offset
    raise LookupError(f"{value:#x} not found")


def _layout() -> dict:
    """The offsets of this interpreter's structures, probed on its own live objects."""
    if sys.implementation.name != "cpython" or sys.version_info[:2] != (3, 11):
        raise LookupError(f"the stack sample reads CPython 3.11's frames, not {sys.implementation.name} {sys.version.split()[0]}'s")
    local = _Memory("self")
    try:
        return _probe(local)
    finally:
        local.close()


def _probe(_local) -> dict:
    api = ctypes.pythonapi
    api.PyInterpreterState_Get.restype = api.PyThreadState_Get.restype = ctypes.c_void_p
    runtime = ctypes.addressof(ctypes.c_char.in_dll(api, "_PyRuntime"))
    interp, thread = api.PyInterpreterState_Get(), api.PyThreadState_Get()
    layout = {"runtime": runtime, "interp_head": _find(_local(runtime, 512), interp), "thread_head": _find(_local(interp, 256), thread)}
    code, here = _Memory.__call__.__code__, globals()  # the frame running while the memory is read
    for offset in range(0, 256, 8):  # tstate->cframe->current_frame: the reader's own frame
        cframe = _word(_local, thread + offset)
        if cframe and cframe % 8 == 0:
            try:
                frame = _word(_local, cframe + CFRAME_CURRENT)
                found = frame and frame % 8 == 0 and _word(_local, frame + FRAME_CODE) == id(code)
            except (OSError, ValueError):
                continue
            if found and _word(_local, frame + FRAME_CODE) == id(code) and _word(_local, frame + FRAME_GLOBALS) == id(here):
                layout["thread_cframe"] = offset
                break
    else:
        raise LookupError("the current frame was not found from the thread state")
    probe = next(const for const in compile("\n" * 12344 + "def f():\n    return 1\n", "<stack sample probe>", "exec").co_consts if hasattr(const, "co_code"))
    memory = _local(id(probe), sys.getsizeof(probe))
    layout.update(code_filename=_find(memory, id(probe.co_filename)), code_name=_find(memory, id(probe.co_name)),
                  code_linetable=_find(memory, id(probe.co_linetable)), code_firstlineno=_find(memory, 12345, "<i"),
                  code_bytes=memory.index(probe.co_code))  # fmt: skip
    return layout


def _mapped(pid: int, address: int) -> int:
    """`address` of this process in process `pid`: the same file mapped at its own base (a fork maps it alike)."""
    def mapping(path):
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                parts = line.split()
                start, end = (int(x, 16) for x in parts[0].split("-"))
                yield start, end, int(parts[2], 16), parts[5] if len(parts) > 5 else ""

    for start, end, offset, name in mapping("/proc/self/maps"):
        if start <= address < end and name:
            for their_start, _, their_offset, their_name in mapping(f"/proc/{pid}/maps"):
                if their_name == name and their_offset == offset:
                    return their_start + address - start
    raise LookupError("the interpreter's runtime is not mapped in the cell process")


def _text(read, address: int) -> str:
    """A str object of the other process (compact ASCII, as file and function names are)."""
    length = _word(read, address + UNICODE_LENGTH)
    return read(address + ASCII_DATA, min(length, 4096)).decode("ascii", "replace")


def _line(read, layout: dict, code: int, instruction: int) -> int:
    """The line of the code object at `code` of the other process that its instruction pointer is on."""
    table = _word(read, code + layout["code_linetable"])
    table_bytes = read(table + BYTES_DATA, _word(read, table + VAR_SIZE))
    units = _word(read, code + VAR_SIZE)
    offset = instruction - (code + layout["code_bytes"])
    first = struct.unpack("<i", read(code + layout["code_firstlineno"], 4))[0]
    probe = compile("pass", "<stack sample>", "exec").replace(co_code=bytes(2 * units), co_linetable=table_bytes, co_firstlineno=first)
    for start, end, line in probe.co_lines():
        if start <= offset < end:
            return line or first
    return first


def sample(pid: int, limit: int = 64) -> list[list[tuple[str, int, str]]]:
    """Each thread's Python stack in process `pid`, outermost frame first: (file, line, function)."""
    layout = _layout()
    read = _Memory(pid)
    try:
        interp = _word(read, _mapped(pid, layout["runtime"]) + layout["interp_head"])
        thread = _word(read, interp + layout["thread_head"])
        stacks = []
        while thread and len(stacks) < 16:
            frames, frame = [], _word(read, _word(read, thread + layout["thread_cframe"]) + CFRAME_CURRENT)
            while frame and len(frames) < limit:
                code = _word(read, frame + FRAME_CODE)
                filename, name = _text(read, _word(read, code + layout["code_filename"])), _text(read, _word(read, code + layout["code_name"]))
                frames.append((filename, _line(read, layout, code, _word(read, frame + FRAME_INSTR)), name))
                frame = _word(read, frame + FRAME_PREVIOUS)
            stacks.append(frames[::-1])
            thread = _word(read, thread + THREAD_NEXT)
    finally:
        read.close()
    return stacks


def where(pid: int, source: str, shown: str, hide: str = "") -> tuple[str, str]:
    """(the innermost `file:line` of the cell's own code, the sample as a traceback), with the cell's source
    file named `shown` (its YAML file) and the frames of files under `hide` (the worker's) left out;
    ('', why not) when there is no sample."""
    error = None
    try:
        os.kill(pid, signal.SIGSTOP)  # it is killed next: stopped, its frames hold still while they are read
        for _ in range(200):
            with open(f"/proc/{pid}/stat", "rb") as handle:
                if handle.read().rsplit(b")", 1)[1].split()[0] in (b"T", b"t"):
                    break
            time.sleep(0.001)
    except OSError:
        pass
    for _ in range(3):  # a process that did not stop in time may move under the reader: read again
        try:
            stacks = sample(pid)
            break
        except (OSError, LookupError, ValueError, struct.error, UnicodeError) as failed:
            error = failed
    else:
        return "", f"no stack sample: {error}"
    for frames in stacks:
        own = [frame for frame in frames if frame[0] == source]
        if own:
            kept = [frame for frame in frames if not (hide and frame[0].startswith(hide + "/")) and not frame[0].startswith(("<lane prelude>", "<frozen "))]
            lines = [f'  File "{shown if file == source else file}", line {line}, in {name}' for file, line, name in kept]
            return f"{shown}:{own[-1][1]}", "Stack sampled before the kill (most recent call last):\n" + "\n".join(lines[-12:])
    return "", "no stack sample: the cell's code was on no thread's stack (it was in its setup's imports, or in a native call from elsewhere)"
