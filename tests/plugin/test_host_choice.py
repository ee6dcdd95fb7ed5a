"""--skill-eval-host: items per host, the host in node ids and evidence paths, clear refusals."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_skill_eval.analysis.trials import aggregate
from pytest_skill_eval.evidence import layout
from pytest_skill_eval.nodeids import item_name, parse_item_id, scope_of, subresult_name
from pytest_skill_eval.views.hosts import aggregate_cross_host_lines, cross_host_lines
from tests.support.runs import skill_eval_args

SEED = Path(__file__).resolve().parents[1] / "definitions" / "data" / "seed"


def _collect(
    pytester: pytest.Pytester, root: Path, *extra: str, suite: Path | None = None
) -> pytest.RunResult:
    __tracebackhide__ = True
    return pytester.runpytest_inprocess(
        "--collect-only", "-q", *skill_eval_args(root, *extra, suite=suite, cassettes=False)
    )


def _items(result: pytest.RunResult) -> list[str]:
    return [line.split("::", 1)[1] for line in result.outlines if "::" in line]


def test_node_ids_carry_a_host_other_than_pi_before_the_trial() -> None:
    assert item_name("g", "candidate", 1, 1) == "g[candidate]"
    assert item_name("g", "candidate", 1, 1, "pi") == "g[candidate]"
    assert item_name("g", "candidate", 2, 3, "claude-code") == "g[candidate@claude-code-trial2]"
    assert parse_item_id("f.json::g[candidate@claude-code-trial2]") == (
        "g",
        "candidate",
        2,
        "claude-code",
    )
    assert parse_item_id("f.json::g[baseline-trial2]") == ("g", "baseline", 2, "pi")
    # One scheduling unit per group, host and trial: a group's variants on a host stay together.
    assert scope_of("f::g[baseline@claude-code]") == scope_of("f::g[candidate@claude-code]")
    assert scope_of("f::g[baseline@claude-code]") != scope_of("f::g[baseline]")
    assert scope_of("f::g[baseline-trial2]") == "f::g-trial2"
    name = item_name("g", "candidate", 2, 2, "claude-code")
    assert subresult_name(name, "g", "candidate", "c", "comparison") == (
        "g::c[comparison@claude-code-trial2]"
    )


def test_evidence_of_a_host_other_than_pi_sits_beside_pis(tmp_path: Path) -> None:
    assert layout.group_dir(tmp_path, "g") == tmp_path / "groups" / "g"
    assert layout.group_dir(tmp_path, "g", "claude-code") == tmp_path / "groups" / "g@claude-code"
    assert layout.split_group_dir_name("g@claude-code") == ("g", "claude-code")
    assert layout.split_group_dir_name("g") == ("g", "pi")
    assert layout.record_dir(tmp_path, {"id": "g", "host": "claude-code"}).name == "g@claude-code"
    assert layout.record_dir(tmp_path, {"id": "g"}).name == "g"


def test_each_named_host_collects_every_group_and_k_selects_a_host(
    pytester: pytest.Pytester, example_root: Path
) -> None:
    both = ("--skill-eval-host", "pi", "--skill-eval-host", "claude-code")
    result = _collect(pytester, example_root, *both)
    assert result.ret == 0, result.stdout.str()
    assert _items(result) == [
        "natural-activation[baseline]",
        "natural-activation[candidate]",
        "natural-activation[baseline@claude-code]",
        "natural-activation[candidate@claude-code]",
        "changelog-entry[baseline]",
        "changelog-entry[candidate]",
        "changelog-entry[baseline@claude-code]",
        "changelog-entry[candidate@claude-code]",
    ]
    only = _collect(pytester, example_root, *both, "-k", "claude-code and candidate")
    assert _items(only) == [
        "natural-activation[candidate@claude-code]",
        "changelog-entry[candidate@claude-code]",
    ]
    trials = _collect(
        pytester, example_root, "--skill-eval-host", "claude-code", "--skill-eval-trials", "2"
    )
    assert "changelog-entry[candidate@claude-code-trial2]" in _items(trials)


def test_the_ini_key_names_hosts_too(pytester: pytest.Pytester, example_root: Path) -> None:
    # Option values never choose the ini file (a path after --skill-eval is not a test path):
    # the ini is named, as a project's own configuration would be found.
    ini = example_root / "pytest.ini"
    ini.write_text("[pytest]\nskill_eval_hosts = claude-code\n")
    result = _collect(pytester, example_root, "-c", str(ini), "-k", "natural-activation")
    assert _items(result) == [
        "natural-activation[baseline@claude-code]",
        "natural-activation[candidate@claude-code]",
    ]


def test_an_unknown_host_is_a_usage_error(pytester: pytest.Pytester, example_root: Path) -> None:
    result = _collect(pytester, example_root, "--skill-eval-host", "cursor")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            '*--skill-eval-host "cursor" is not accepted; '
            "use one of: pi, claude-code, codex, gemini-cli*"
        ]
    )


def test_a_group_the_chosen_host_cannot_run_is_collected_for_its_skip(
    pytester: pytest.Pytester,
) -> None:
    group = SEED / "groups" / "runtime-profile.json"
    hosts = ("--skill-eval-host", "pi", "--skill-eval-host", "claude-code")
    result = _collect(pytester, SEED, *hosts, suite=group)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert _items(result) == [
        "runtime-probe[baseline]",
        "runtime-probe[candidate]",
        "runtime-probe[baseline@claude-code]",
        "runtime-probe[candidate@claude-code]",
    ]


def test_a_declared_host_that_cannot_run_its_group_stays_a_collection_error(
    pytester: pytest.Pytester,
) -> None:
    root = pytester.path / "seed"
    shutil.copytree(SEED, root)
    suite = root / "groups" / "runtime-profile.json"
    definition = json.loads(suite.read_text())
    definition["runtime"]["host"] = "claude-code"
    suite.write_text(json.dumps(definition))
    result = _collect(pytester, root, "--skill-eval-host", "pi", suite=suite)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*runtime extension bundles are Pi's*"])
    assert "Traceback" not in result.stdout.str()


def test_declared_commands_run_on_claude_code(pytester: pytest.Pytester) -> None:
    group = SEED / "groups" / "declared-commands.json"
    result = _collect(pytester, SEED, "--skill-eval-host", "claude-code", suite=group)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert all(item.endswith("@claude-code]") for item in _items(result))
    assert _items(result)


def _trials(tmp_path: Path) -> list[Path]:
    """Two trials' results of group g on Pi and Claude Code, its one check passing on both."""
    grade = {
        "checks": [{"id": "c", "variant": "candidate", "kind": "skill-read", "state": "pass"}],
        "comparisons": [],
    }
    trials = []
    for number in (1, 2):
        result = tmp_path / f"trial{number}"
        records = []
        for host in ("pi", "claude-code"):
            group = layout.group_dir(result, "g", host)
            group.mkdir(parents=True)
            (group / layout.GRADE).write_text(json.dumps(grade))
            record = {"id": "g", "state": "complete", "artifacts": {"grade": layout.GRADE}}
            record |= {"host": host} if host != "pi" else {}
            (group / layout.GROUP).write_text(json.dumps(record))
            records.append(record)
        summary = {"state": "complete", "groups": records}
        (result / layout.SUMMARY).write_text(json.dumps(summary))
        trials.append(result)
    return trials


def test_an_aggregate_keeps_a_groups_hosts_apart(tmp_path: Path) -> None:
    groups = aggregate("agg", _trials(tmp_path), 2)["groups"]
    assert [(g["id"], g.get("host"), g["trials"]) for g in groups] == [
        ("g", None, 2),
        ("g", "claude-code", 2),
    ]


def test_a_host_that_cannot_run_a_group_is_a_column_of_its_own_counted_apart(
    tmp_path: Path,
) -> None:
    reason = "declared commands (run_command) are not offered on runtime.host codex yet"
    trials = _trials(tmp_path)
    for result in trials:
        cannot = [{"group": "g", "host": "codex", "reason": reason}]
        invocation = {"hosts": ["pi", "claude-code", "codex"], "cannotRun": cannot}
        (result / layout.INVOCATION).write_text(json.dumps(invocation))
    assert cross_host_lines(trials[0]) == [
        "  cross-host g (pi, claude-code, codex): held on every host that can run it",
        f"    codex cannot run: {reason}",
        "    check c: pi=pass claude-code=pass codex=[cannot run] held",
    ]
    aggregated = aggregate("agg", trials, 2)
    # Counted apart: neither a pass nor a fail of the group, and said with its trials.
    assert [g.get("host") for g in aggregated["groups"]] == [None, "claude-code"]
    counted = {"group": "g", "host": "codex", "reason": reason, "trials": 2}
    assert aggregated.get("cannotRun") == [counted]
    (table,) = aggregated.get("crossHost", [])
    assert (table["hosts"], table["held"], table["cannotRun"]) == (
        ["pi", "claude-code", "codex"],
        True,
        {"codex": reason},
    )
    assert aggregate_cross_host_lines(aggregated)[-1] == (
        "    check c: pi=[pass=2] claude-code=[pass=2] codex=[cannot run] held"
    )
