"""The shipped example suite on Gemini CLI, offline, from the scripts every host shares."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hosts.test_cross_host_e2e import EXPECTED, _outcome
from tests.support import runs
from tests.support.files import read_json

pytestmark = [pytest.mark.pi, pytest.mark.gemini]


def test_example_suite_on_gemini_cli_from_the_same_scripts(
    pytester: pytest.Pytester, example_root: Path, tmp_path: Path
) -> None:
    # A run on Gemini CLI alone never asks for Pi: a missing Pi binary is no error here.
    no_pi = str(tmp_path / "no-such-pi")
    result = runs.run(
        pytester, example_root, "-v", "--skill-eval-host", "gemini-cli", "--skill-eval-pi", no_pi
    )
    assert result.ret == 0, result.stdout.str()
    result_dir = runs.result_dir(example_root)
    for group_id, expected in EXPECTED.items():
        group_dir = result_dir / "groups" / f"{group_id}@gemini-cli"
        # The candidate reads the skill's snapshot (a declared resource) before activating it.
        assert _outcome(group_dir) == expected, group_id
        for variant in ("baseline", "candidate"):
            run = read_json(group_dir / variant / "run.json")
            assert run["process"]["host"] == "gemini-cli"
            assert run["provider"]["mode"] == "scripted"
            assert run["binary"]["version"] == "0.61.0"
