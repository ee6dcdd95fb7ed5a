"""When a held host has finished starting: its CPU has stopped rising.

A host that reads its first prompt on stdin (opencode) says nothing when it has loaded and
waits for the prompt: it simply blocks on its read. Its start-up slot (`hosts.startup`) was
freed at the spawn, so a pre-started opencode loaded its bundle (about 1.3 s of CPU) beside as
many other start-ups as there are cores. Its CPU, read from the kernel's account of it, tells
instead: it rises at up to a core's rate while the host starts and by at most a clock tick now
and then once it waits. Nothing here touches evidence: it only decides when a slot is freed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

SAMPLE_S = 0.05  # how often a held host's CPU is read while it starts
WINDOW_S = 0.15  # how long its CPU must stay (nearly) flat
IDLE_CPU_S = 0.01  # the most it may rise over the window: one tick of the kernel's clock
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pid: int) -> float | None:
    """User and system CPU of process `pid` so far, from `/proc/PID/stat`; None when it cannot
    be read (no `/proc`, or the process is gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            # Fields 14 and 15 (utime, stime), counted after the command name's `)`.
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICKS
    except (OSError, IndexError, ValueError):
        return None


class Settling:
    """Whether a process has settled: its CPU rose by at most `IDLE_CPU_S` over the last
    `WINDOW_S`. A reading that fails counts as settled (the slot is then freed, as before)."""

    def __init__(
        self, read: Callable[[], float | None], clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._read = read
        self._clock = clock
        self._samples: list[tuple[float, float]] = []

    @classmethod
    def of(cls, pid: int) -> Settling:
        """Watch process `pid`."""
        return cls(lambda: cpu_seconds(pid))

    def settled(self) -> bool:
        """Take a reading; whether the process has settled."""
        now, cpu = self._clock(), self._read()
        if cpu is None:
            return True
        self._samples.append((now, cpu))
        # Keep the newest reading at least a window old, and every one after it.
        while len(self._samples) > 1 and now - self._samples[1][0] >= WINDOW_S:
            self._samples.pop(0)
        since, before = self._samples[0]
        return now - since >= WINDOW_S and cpu - before <= IDLE_CPU_S + 1e-9
