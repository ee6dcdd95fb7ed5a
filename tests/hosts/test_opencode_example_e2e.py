"""The shipped example suite on opencode, offline, from the scripts every host shares."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hosts.test_cross_host_e2e import EXPECTED, _outcome
from tests.support import runs
from tests.support.files import read_json

pytestmark = pytest.mark.pi


def test_example_suite_on_opencode_from_the_same_scripts(
    pytester: pytest.Pytester, example_root: Path, tmp_path: Path
) -> None:
    # A run on opencode alone never asks for Pi: a missing Pi binary is no error here.
    no_pi = str(tmp_path / "no-such-pi")
    result = runs.run(
        pytester, example_root, "-v", "--skill-eval-host", "opencode", "--skill-eval-pi", no_pi
    )
    assert result.ret == 0, result.stdout.str()
    result_dir = runs.result_dir(example_root)
    for group_id, expected in EXPECTED.items():
        group_dir = result_dir / "groups" / f"{group_id}@opencode"
        assert _outcome(group_dir) == expected, group_id
        for variant in ("baseline", "candidate"):
            run = read_json(group_dir / variant / "run.json")
            assert run["process"]["host"] == "opencode"
            assert run["binary"]["version"] == "1.18.33"
            # One request per scripted answer: opencode never asked for a title.
            requests = runs.model_requests(group_dir / variant)
            assert len(requests) == len(run["turns"][0]["toolActivity"]) + 1
