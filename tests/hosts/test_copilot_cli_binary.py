"""Copilot CLI's binary check: its unpacked package is shared by every run of the pinned
version, and another version's goes once no run has used it for a month."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from pytest_skill_eval.hosts.copilot_cli.binary import check_copilot
from pytest_skill_eval.hosts.copilot_cli.environment import package_cache
from pytest_skill_eval.hosts.copilot_cli.registration import COPILOT_CLI
from tests.support.files import write


def test_another_versions_unpacked_package_goes_once_unused_for_a_month(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    # A stand-in that answers `--version` as the pinned Copilot CLI does.
    answer = f"#!/bin/sh\necho {COPILOT_CLI.version}\n"
    copilot = write(tmp_path / "bin" / "copilot", answer, mode=0o755)
    family = package_cache(COPILOT_CLI.version).parent
    unused, recent = family / "0.0.1", family / "0.0.2"
    write(unused / "app.js", "")
    write(recent / "app.js", "")
    long_ago = time.time() - 40 * 86400
    os.utime(unused, (long_ago, long_ago))
    assert check_copilot(copilot).version == COPILOT_CLI.version
    assert not unused.exists()
    assert recent.exists()  # used within the month
    assert [p.name for p in family.iterdir() if not p.name.startswith(".")] == ["0.0.2"]
