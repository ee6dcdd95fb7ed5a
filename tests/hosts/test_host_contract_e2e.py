"""Every registered host through the same cases: the shipped example suite, offline, from the
scripts every host shares, gives Pi's states and transitions (what a host cannot observe is
`unavailable`, not guessed), and its evidence names the host; a skill's reference file read and
a JSON file written grade resource-read, path and json checks. What only one host shows is its
adapter's; every host at once: `test_all_hosts_e2e.py`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.evidence import layout
from pytest_skill_eval.hosts.registration import HostRegistration
from pytest_skill_eval.hosts.registry import registered
from pytest_skill_eval.nodeids import DEFAULT_HOST
from pytest_skill_eval.run.providers import SCRIPTED_PRICES
from tests.support import runs
from tests.support.example import OUTCOMES
from tests.support.files import read_json, write
from tests.support.roots import kinds_group, runtime

# The example's checks that are a `tool-call` on a neutral tool: unavailable where the host
# cannot observe that tool (its registration's `unobservable`).
TOOL_CALL_CHECKS = {"candidate-read-first": "read"}


def _codex_run(variant_dir: Path, run: dict[str, Any]) -> None:
    assert "mount namespace" in run["binary"]["enforced"]["reads"]  # reads confined


def _opencode_run(variant_dir: Path, run: dict[str, Any]) -> None:
    # One request per scripted answer: opencode never asked for a title.
    requests = runs.model_requests(variant_dir)
    assert len(requests) == len(run["turns"][0]["toolActivity"]) + 1


@dataclass(frozen=True)
class Adapter:
    """What the contract needs to know of one host beyond its registration."""

    marks: tuple[pytest.MarkDecorator, ...] = ()
    # Host-specific assertions on one variant's directory and run record.
    run: Callable[[Path, dict[str, Any]], None] = lambda variant_dir, run: None


ADAPTERS = {
    "claude-code": Adapter((pytest.mark.claude,)),
    "codex": Adapter((pytest.mark.codex,), _codex_run),
    "gemini-cli": Adapter((pytest.mark.gemini,)),
    "opencode": Adapter(run=_opencode_run),
}
HOSTS = [
    pytest.param(r, marks=ADAPTERS.get(r.name, Adapter()).marks, id=r.name) for r in registered()
]
pytestmark = pytest.mark.pi


def _expected(registration: HostRegistration) -> dict[str, tuple[dict[str, str], dict[str, str]]]:
    unavailable = {
        c: "unavailable" for c, t in TOOL_CALL_CHECKS.items() if t in registration.unobservable
    }
    return {
        group: ({k: unavailable.get(k, v) for k, v in checks.items()}, transitions)
        for group, (checks, transitions) in OUTCOMES.items()
    }


@pytest.mark.parametrize("registration", HOSTS)
def test_the_example_suite_gives_pis_outcomes_on_each_host(
    registration: HostRegistration, pytester: pytest.Pytester, example_root: Path, tmp_path: Path
) -> None:
    host = registration.name
    args = ["-v", "--skill-eval-host", host]
    if host != DEFAULT_HOST:
        # A run on another host alone never asks for Pi: a missing Pi binary is no error here.
        args += ["--skill-eval-pi", str(tmp_path / "no-such-pi")]
    result = runs.run(pytester, example_root, *args)
    assert result.ret == 0, result.stdout.str()
    on = "" if host == DEFAULT_HOST else f"@{host}"
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
    for group_id, expected in _expected(registration).items():
        group_dir = layout.group_dir(result_dir, group_id, host)
        assert runs.outcome(group_dir) == expected, group_id
        for variant in ("baseline", "candidate"):
            run = read_json(group_dir / variant / "run.json")
            assert run["host"] == {"name": host, "chosenBy": "invocation", "declared": DEFAULT_HOST}
            assert run["process"]["host"] == host
            assert run["provider"]["mode"] == "scripted"
            assert run["binary"]["version"] == registration.version
            assert "pi" not in run
            # Simulated cost: the scripted usage at the one table, whatever the host prices.
            usage = run["usage"]
            table = sum(usage[key] * SCRIPTED_PRICES[key] for key in SCRIPTED_PRICES) / 1e6
            assert usage["cost"]["total"] == pytest.approx(table)
            assert run["spend"] == {"usd": pytest.approx(table), "simulated": True}
            ADAPTERS.get(host, Adapter()).run(group_dir / variant, run)


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
