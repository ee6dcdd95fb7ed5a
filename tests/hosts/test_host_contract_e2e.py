"""Every registered host through the same cases: a skill's reference file read and a JSON file
written grade resource-read, path and json checks; a run on one host alone is that host's only.
The shipped example suite from the scripts every host shares, on every host at once (Pi's states
and transitions, each host's record): `test_all_hosts_e2e.py`. What only one host shows is its
adapter's."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_skill_eval.evidence import layout
from pytest_skill_eval.hosts.registration import HostRegistration
from pytest_skill_eval.hosts.registry import registered
from pytest_skill_eval.nodeids import DEFAULT_HOST
from tests.support import runs
from tests.support.example import OUTCOMES, outcomes_on
from tests.support.files import read_json, write
from tests.support.host_records import assert_example_record
from tests.support.roots import kinds_group, runtime

MARKS = {
    "claude-code": (pytest.mark.claude,),
    "codex": (pytest.mark.codex,),
    "gemini-cli": (pytest.mark.gemini,),
}
HOSTS = [pytest.param(r, marks=MARKS.get(r.name, ()), id=r.name) for r in registered()]
pytestmark = pytest.mark.pi


# Every host runs the example in the all-hosts run; alone, one host other than Pi stands for
# them (Pi alone is the default run's).
@pytest.mark.codex
def test_the_example_suite_on_one_host_alone_is_that_hosts_only(
    pytester: pytest.Pytester, example_root: Path, tmp_path: Path
) -> None:
    host = "codex"
    # A run on another host alone never asks for Pi: a missing Pi binary is no error here.
    args = ["-v", "--skill-eval-host", host, "--skill-eval-pi", str(tmp_path / "no-such-pi")]
    result = runs.run(pytester, example_root, *args)
    assert result.ret == 0, result.stdout.str()
    on = f"@{host}"
    result.stdout.fnmatch_lines(
        [
            f"*natural-activation?candidate{on}? PASSED*",
            f"*changelog-entry::entry-in-fixed?comparison{on}? FAIL-TO-PASS*",
            f"*group changelog-entry{on} ?complete? baseline=complete candidate=complete*",
        ]
    )
    assert "cross-host" not in result.stdout.str()  # one host: no table
    result_dir = runs.result_dir(example_root)
    assert read_json(result_dir / "invocation.json")["hosts"] == [host]
    summary = read_json(result_dir / "summary.json")
    assert [(g["id"], layout.record_host(g)) for g in summary["groups"]] == [
        ("natural-activation", host),
        ("changelog-entry", host),
    ]
    names = sorted(layout.group_dir_name(g, host) for g in OUTCOMES)
    assert sorted(p.name for p in (result_dir / "groups").iterdir()) == names
    assert host != DEFAULT_HOST
    for group_id, outcome in outcomes_on(host).items():
        group_dir = layout.group_dir(result_dir, group_id, host)
        assert runs.outcome(group_dir) == outcome, group_id
        for variant in ("baseline", "candidate"):
            assert_example_record(host, group_dir / variant)


@pytest.mark.parametrize("registration", HOSTS)
def test_resource_read_path_and_json_are_observed_on_each_host(
    registration: HostRegistration, pytester: pytest.Pytester
) -> None:
    root = pytester.path / "root"
    write(root / "fixture" / "notes.txt", "alpha\n")
    group = kinds_group(root, runtime(host=registration.name))
    result = runs.run_candidate(pytester, root, [group])
    assert result.ret == 0, result.stdout.str()
    group_dir = layout.group_dir(runs.result_dir(root), "kinds", registration.name)
    assert runs.check_states(group_dir) == {"read-guide": "pass", "wrote": "pass", "status": "pass"}
