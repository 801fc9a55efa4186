"""This machine, as results name it."""

from __future__ import annotations

import os
import platform


def cpu_model() -> str:
    """The processor's model name, e.g. 'AMD EPYC 7B13'."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return model


def cpu_description() -> str:
    """The processor this machine runs cells on, e.g. 'cpu: AMD EPYC 7B13 (2 cores)'."""
    return f"cpu: {cpu_model()} ({os.cpu_count()} cores)"
