"""What the invocation says about a host's binary: one `HostOptions` per host (imports no host)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class HostOptions:
    """What the invocation says about a host's binary and what it accepts on this machine."""

    binary: str | None = None  # --skill-eval-<host> PATH
    unconfined_reads: bool = False  # --skill-eval-codex-unconfined-reads
    node: str | None = None  # --skill-eval-node PATH: a Node host's runtime (else the pinned)
    pi_bundle: bool = True  # --skill-eval-pi-bundle off: stock Pi
    gemini_eager: bool = True  # --skill-eval-gemini-eager off: Gemini CLI's own files
    # pytest's rootdir: node_modules are looked for from the definition root up to it.
    rootdir: Path | None = None
