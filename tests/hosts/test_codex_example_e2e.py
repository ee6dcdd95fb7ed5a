"""The shipped example suite on Codex, offline, from the scripts every host shares."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hosts.test_cross_host_e2e import EXPECTED, _outcome
from tests.support import runs
from tests.support.files import read_json

pytestmark = [pytest.mark.pi, pytest.mark.codex]


def test_example_suite_on_codex_from_the_same_scripts(
    pytester: pytest.Pytester, example_root: Path, tmp_path: Path
) -> None:
    # A run on Codex alone never asks for Pi: a missing Pi binary is no error here.
    no_pi = str(tmp_path / "no-such-pi")
    result = runs.run(
        pytester, example_root, "-v", "--skill-eval-host", "codex", "--skill-eval-pi", no_pi
    )
    assert result.ret == 0, result.stdout.str()
    result_dir = runs.result_dir(example_root)
    for group_id, (checks, transitions) in EXPECTED.items():
        group_dir = result_dir / "groups" / f"{group_id}@codex"
        if group_id == "changelog-entry":
            # A tool-call on `read`: Codex has no read tool, so it is unavailable, not guessed.
            checks = {**checks, "candidate-read-first": "unavailable"}
        assert _outcome(group_dir) == (checks, transitions), group_id
        for variant in ("baseline", "candidate"):
            run = read_json(group_dir / variant / "run.json")
            assert run["process"]["host"] == "codex"
            assert "mount namespace" in run["binary"]["enforced"]["reads"]
