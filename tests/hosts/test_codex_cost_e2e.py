"""Codex prices nothing itself: its simulated cost comes from the scripted usage and the price
table every host is served, so the same scripts show the same figure as on Pi."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import runs
from tests.support.files import read_json
from tests.support.shared import SharedRun

pytestmark = [pytest.mark.pi, pytest.mark.codex]


def test_a_scripted_codex_run_shows_pis_simulated_cost(
    pytester: pytest.Pytester, example_root: Path, example_run: SharedRun
) -> None:
    result = runs.run(pytester, example_root, "--skill-eval-host", "codex")
    assert result.ret == 0, result.stdout.str()
    # Codex has no read tool: one check is unavailable, and pytest's summary says so in the
    # singular.
    result.stdout.fnmatch_lines(["*, 1 check unavailable in *"])
    codex_dir = runs.result_dir(example_root)
    pi_dir = runs.result_dir(example_run.root)
    for group in ("natural-activation", "changelog-entry"):
        for variant in ("baseline", "candidate"):
            codex = read_json(codex_dir / "groups" / f"{group}@codex" / variant / "run.json")
            pi = read_json(pi_dir / "groups" / group / variant / "run.json")
            assert codex["spend"]["simulated"] is True
            assert codex["spend"]["usd"] > 0
            assert codex["spend"] == pi["spend"], (group, variant)
