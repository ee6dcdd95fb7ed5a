"""Which results `skill-eval verify`'s code reads in full: the verified-results cache keeps it
from reading a result it remembers."""

from __future__ import annotations

from pathlib import Path

import pytest

import pytest_skill_eval.evidence.shard_seal as shard_seal


def record_verifications(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Each result `shard_seal.verify` reads from now on, in order."""
    seen: list[Path] = []
    real = shard_seal.verify

    def verify(result: Path) -> list[str]:
        seen.append(result)
        return real(result)

    monkeypatch.setattr(shard_seal, "verify", verify)
    return seen
