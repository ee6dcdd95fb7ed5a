"""When a held host has finished starting: its CPU has stopped rising and it sleeps.

A host that reads its first prompt on stdin (opencode) says nothing when it has loaded and
waits for the prompt: it simply blocks on its read. Its start-up slot (`hosts.startup`) was
freed at the spawn, so a pre-started opencode loaded its bundle (about 1.5 s of CPU) beside as
many other start-ups as there are cores. The kernel's account of it tells instead: while it
starts, its CPU rises at up to a core's rate; once it waits, its CPU rises by at most a clock
tick now and then and it sleeps (neither runnable, which a starved start-up would be, nor in
uninterruptible I/O, which a start-up reading its executable from disk would be). Only the
host's own process is read: the plugin starts opencode's executable itself, never a launcher.
Nothing here touches evidence: it only decides when a slot is freed, and the slot's own limit
(`startup.HOLD_S`) still frees it if this never does.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from .guardian import stat_fields

SAMPLE_S = 0.05  # how often a held host is read while it starts
WINDOW_S = 0.15  # how long its CPU must stay (nearly) flat
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
IDLE_CPU_S = 1 / _TICKS  # the most it may rise over the window: one tick of the kernel's clock
SLEEPING = "S"


@dataclass(frozen=True)
class Reading:
    """One read of a process: its CPU so far, its state, and when it started (which tells a
    reused pid apart)."""

    cpu_s: float
    state: str
    started: int


def read(pid: int) -> Reading | None:
    """Process `pid` from `/proc/PID/stat`; None when it cannot be read (no `/proc`, or the
    process is gone)."""
    try:
        fields = stat_fields(pid)
        if fields is None:
            return None
        # From the state (field 3): utime and stime (14, 15), starttime (22).
        cpu = (int(fields[11]) + int(fields[12])) / _TICKS
        return Reading(cpu, fields[0].decode("ascii", "replace"), int(fields[19]))
    except (IndexError, ValueError):
        return None


def cpu_seconds(pid: int) -> float | None:
    """User and system CPU of process `pid` so far; None when it cannot be read."""
    reading = read(pid)
    return None if reading is None else reading.cpu_s


class Settling:
    """Whether a process has settled: it sleeps and its CPU rose by at most `IDLE_CPU_S` over
    the last `WINDOW_S`. A process that cannot be read, or whose pid now names another
    process, counts as settled (its slot is then freed, as before)."""

    def __init__(
        self, read: Callable[[], Reading | None], clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._read = read
        self._clock = clock
        self._samples: list[tuple[float, Reading]] = []

    @classmethod
    def of(cls, pid: int) -> Settling:
        """Watch process `pid`."""
        return cls(lambda: read(pid))

    def settled(self) -> bool:
        """Take a reading; whether the process has settled."""
        now, reading = self._clock(), self._read()
        if reading is None:
            return True
        if self._samples and reading.started != self._samples[0][1].started:
            return True  # the host was reaped and its pid handed to another process
        self._samples.append((now, reading))
        # Keep the newest reading at least a window old, and every one after it.
        while len(self._samples) > 1 and now - self._samples[1][0] >= WINDOW_S:
            self._samples.pop(0)
        since, before = self._samples[0]
        flat = reading.cpu_s - before.cpu_s <= IDLE_CPU_S + 1e-9
        return now - since >= WINDOW_S and flat and reading.state == SLEEPING
