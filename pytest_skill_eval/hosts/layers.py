"""System-wide and managed layers: configuration a host reads whatever its isolated home says.

Managed settings, managed MCP servers, managed memory and `/etc` configuration sit outside the
home the evaluator gives each run, and a host merges them over (or instead of) its own. Each
host declares its layers in its subpackage (`SYSTEM_LAYERS`, exposed as `Host.system_layers`);
this one check refuses a machine where any of them exists, once before any group runs and again
right before each subject starts, so every `run.json` can say how each was kept out.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import HostError

if TYPE_CHECKING:
    from ..evidence.records import SystemLayerRecord


@dataclass(frozen=True, slots=True)
class SystemLayer:
    """One file or directory a host reads from outside its isolated home, and what it is."""

    path: Path
    what: str


class SystemLayerError(HostError):
    """A system-wide or managed layer of a host exists on this machine: its subjects would
    read configuration the evaluator cannot override."""


def present(layers: Iterable[SystemLayer]) -> list[SystemLayer]:
    """The layers that exist here (a dangling symlink counts: the host may follow it later)."""
    return [layer for layer in layers if os.path.lexists(layer.path)]


def _named(layer: SystemLayer) -> str:
    """The layer as the refusal names it: a directory with the entries it holds."""
    try:
        entries = sorted(os.listdir(layer.path)) if os.path.isdir(layer.path) else None
    except OSError:
        entries = None
    if entries is None:
        return f"{layer.path} ({layer.what})"
    held = ", ".join(map(repr, entries[:3])) + (", …" if len(entries) > 3 else "")
    return f"{layer.path} ({layer.what}: {held or 'empty'})"


def kept_out(host: str, layers: Sequence[SystemLayer]) -> list[SystemLayerRecord]:
    """How each of `host`'s layers is kept from its subjects; SystemLayerError when one exists."""
    found = present(layers)
    if found:
        named = ", ".join(_named(layer) for layer in found)
        raise SystemLayerError(
            f"{host} would read system-wide configuration the evaluator cannot override: "
            f"{named}; remove it (or run on a machine without it)"
        )
    return [{"path": str(layer.path), "kept": "absent"} for layer in layers]
