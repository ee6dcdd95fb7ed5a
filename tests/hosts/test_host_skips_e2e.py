"""Several hosts chosen at once: every group runs on every host that can run it, the others are
skips with their reason, and the cross-host table says which held where."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.views.text import render_text
from tests.support.files import read_json, write
from tests.support.roots import Group, build, runtime, skill, variant
from tests.support.runs import result_dir, skill_eval_args

pytestmark = [pytest.mark.pi, pytest.mark.claude, pytest.mark.codex]

HOSTS = ("pi", "claude-code", "codex")
NO_BUNDLES = "runtime extension bundles are Pi's; runtime.host {} cannot load them"
NOOP_EXTENSION = "export default function (pi) {}\n"


def _writes(root: Path, group_id: str, **extra: Any) -> Group:
    """A body group whose candidate writes `<id>.txt`; a `path` check says it did."""
    declared = skill(root, f"{group_id}-skill")
    calls: list[dict[str, Any]] = list(extra.pop("calls", []))
    calls.append({"name": "write", "arguments": {"path": f"{group_id}.txt", "content": "ok\n"}})
    return Group(
        id=group_id,
        turns=["Leave a note."],
        tools=["read", "write", *extra.pop("tools", [])],
        candidate=variant([declared], 0),
        expectations=[
            {
                "id": "wrote",
                "kind": "path",
                "variant": "candidate",
                "path": f"{group_id}.txt",
                "expect": "exists",
            }
        ],
        scripts={"candidate": [*({"tool_calls": [c]} for c in calls), {"text": "Done."}]},
        **extra,
    )


def five_groups(root: Path) -> list[Group]:
    write(root / "fixture" / "README.md", "notes\n")
    write(root / "extensions" / "noop" / "noop.mjs", NOOP_EXTENSION)
    with_bundle = runtime()
    with_bundle["extensions"] = [
        {"entry": "extensions/noop/noop.mjs", "resources": ["extensions/noop"]}
    ]
    look = {"name": "run_command", "arguments": {"command": "look"}}
    return [
        _writes(root, "first"),
        _writes(root, "bundled", runtime=with_bundle),
        _writes(root, "second"),
        _writes(
            root,
            "commanded",
            tools=["run_command"],
            commands=[{"id": "look", "argv": ["sh", "-c", "ls"]}],
            calls=[look],
        ),
        _writes(root, "third"),
    ]


def test_each_group_runs_on_each_host_that_can_and_the_rest_are_skips_with_reasons(
    pytester: pytest.Pytester,
) -> None:
    root = pytester.path / "root"
    suite = build(root, five_groups(root))
    hosts = [arg for host in HOSTS for arg in ("--skill-eval-host", host)]
    junit = pytester.path / "junit.xml"
    args = ("--skill-eval-variant", "candidate", f"--junitxml={junit}", "-rs", *hosts)
    result = pytester.runpytest_subprocess(*skill_eval_args(root, *args, suite=suite))
    assert result.ret == 0, result.stdout.str()
    # 5 groups × 3 hosts: the Pi-extension group cannot run on the two other hosts.
    result.assert_outcomes(passed=13, skipped=2)
    for host in ("claude-code", "codex"):
        result.stdout.fnmatch_lines(
            [f"SKIPPED *cannot run on {host}: {NO_BUNDLES.format(host)}"], consecutive=False
        )
    skips = {
        case.get("name"): skipped.get("message")
        for case in ET.parse(junit).getroot().iter("testcase")
        for skipped in case.iter("skipped")
    }
    assert skips == {
        f"bundled[candidate@{host}]": f"cannot run on {host}: {NO_BUNDLES.format(host)}"
        for host in ("claude-code", "codex")
    }

    result_path = result_dir(root)
    invocation = read_json(result_path / "invocation.json")
    assert invocation["cannotRun"] == [
        {"group": "bundled", "host": host, "reason": NO_BUNDLES.format(host)}
        for host in ("claude-code", "codex")
    ]
    summary = read_json(result_path / "summary.json")
    ran = [(g["id"], g.get("host", "pi"), g["state"]) for g in summary["groups"]]
    assert sorted(ran) == sorted(
        [(g, h, "complete") for g in ("first", "second", "commanded", "third") for h in HOSTS]
        + [("bundled", "pi", "complete")]
    )
    result.stdout.fnmatch_lines(
        [
            "*= skill-eval =*",
            f"  group bundled@claude-code [skipped] cannot run: {NO_BUNDLES.format('claude-code')}",
            "  cross-host bundled (pi, claude-code, codex): held on every host that can run it",
            f"    claude-code cannot run: {NO_BUNDLES.format('claude-code')}",
            f"    codex cannot run: {NO_BUNDLES.format('codex')}",
            "    check wrote: pi=pass claude-code=[cannot run] codex=[cannot run] held",
            "  cross-host commanded (pi, claude-code, codex): held on every host",
            "    check wrote: pi=pass claude-code=pass codex=pass held",
        ],
        consecutive=False,
    )
    text = render_text(result_path)
    assert f"bundled on codex: cannot run: {NO_BUNDLES.format('codex')}" in text
