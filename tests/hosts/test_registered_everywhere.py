"""Every registered host, and one registered in-process, is seen wherever hosts are listed:
option help, node ids, the cross-host table, the plan and (for the shipped hosts) the docs.

A host is one registration in `hosts/registry.py`: none of these places may name hosts itself.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from pytest_skill_eval.commands.cli import main as skill_eval
from pytest_skill_eval.evidence import layout
from pytest_skill_eval.hosts import registry
from pytest_skill_eval.hosts.registration import HostRegistration
from pytest_skill_eval.hosts.registry import REGISTERED, registration_for
from pytest_skill_eval.nodeids import DEFAULT_HOST
from pytest_skill_eval.views.hosts import cross_host_lines
from tests.support.files import read_json
from tests.support.registry import register
from tests.support.runs import skill_eval_args

DOCS = Path(__file__).resolve().parents[2] / "docs" / "hosts.md"


def _twin() -> HostRegistration:
    """A host the shipped code has never heard of: Codex's implementation under a new name."""
    return dataclasses.replace(
        registration_for("codex"),
        name="codex-twin",
        display_name="Codex Twin",
        binary_option="codex-twin",
        command="codex-twin",
    )


@pytest.fixture(params=["registered", "one-more"])
def hosts(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The registered hosts' names, with a host registered for this test (`one-more`)."""
    if request.param == "one-more":
        register(monkeypatch, _twin())
    return list(registry.names())


def test_option_help_names_each_host_and_its_binary_option(
    pytester: pytest.Pytester, hosts: list[str]
) -> None:
    result = pytester.runpytest_inprocess("--help")
    text = re.sub(r"\s+", " ", result.stdout.str())
    assert f"repeatable ({', '.join(hosts)})" in text
    for name in hosts:
        registration = registration_for(name)
        assert f"{registration.option}=PATH the {registration.display_name} binary" in text
        assert f"{registration.ini} (string): the {registration.display_name} binary" in text


def test_node_ids_carry_each_host(
    pytester: pytest.Pytester, example_root: Path, hosts: list[str]
) -> None:
    chosen = [arg for name in hosts for arg in ("--skill-eval-host", name)]
    args = skill_eval_args(example_root, *chosen, cassettes=False)
    result = pytester.runpytest_inprocess("--collect-only", "-q", *args)
    assert result.ret == 0, result.stdout.str()
    items = [line.split("::", 1)[1] for line in result.outlines if "::" in line]
    on = ["" if name == DEFAULT_HOST else f"@{name}" for name in hosts]
    assert items == [
        f"{group}[{variant}{suffix}]"
        for group in ("natural-activation", "changelog-entry")
        for suffix in on
        for variant in ("baseline", "candidate")
    ]


def test_the_plan_lists_each_host(tmp_path: Path, example_root: Path, hosts: list[str]) -> None:
    out = tmp_path / "plan.json"
    argv = ["plan", str(example_root / "suite.json"), "--root", str(example_root), "-o", str(out)]
    argv += [arg for name in hosts for arg in ("--host", name)]
    assert skill_eval(argv) == 0
    plan = read_json(out)
    assert plan["selection"]["hosts"] == hosts
    assert {tuple(unit["hosts"]) for unit in plan["units"]} == {tuple(hosts)}


def test_the_cross_host_table_has_a_column_per_host(tmp_path: Path, hosts: list[str]) -> None:
    grade = {"checks": [{"id": "c", "variant": "candidate", "kind": "skill-read", "state": "pass"}]}
    records = []
    for name in hosts:
        group = layout.group_dir(tmp_path, "g", name)
        group.mkdir(parents=True)
        (group / layout.GRADE).write_text(json.dumps(grade | {"comparisons": []}))
        record = {"id": "g", "state": "complete", "artifacts": {"grade": layout.GRADE}}
        record |= {"host": name} if name != layout.DEFAULT_HOST else {}
        (group / layout.GROUP).write_text(json.dumps(record))
        records.append(record)
    (tmp_path / layout.SUMMARY).write_text(json.dumps({"state": "complete", "groups": records}))
    lines = cross_host_lines(tmp_path)
    # The table lists Pi first, then the hosts in the order their group directories sort (the
    # views read evidence only: they know no registration order).
    shown = [hosts[0], *sorted(hosts[1:])]
    assert lines[0] == f"  cross-host g ({', '.join(shown)}): held on every host"
    assert lines[1] == "    check c: " + " ".join(f"{name}=pass" for name in shown) + " held"


def test_the_docs_list_each_shipped_host_with_its_pinned_binary() -> None:
    table = re.search(r"^## Which binary\n(.*?)(?=^## )", DOCS.read_text(), re.M | re.S)
    assert table, "docs/hosts.md has no '## Which binary' section"
    rows = [line for line in table.group(1).splitlines() if line.startswith("| `")]
    assert len(rows) == len(registry.registered())
    for row, registration in zip(rows, registry.registered(), strict=True):
        assert row.startswith(f"| `{registration.name}` | `{registration.package}` ")
        assert f" {registration.version} " in row
        assert f"`{registration.option} PATH`" in row


def test_evidence_and_node_ids_leave_the_same_host_unnamed() -> None:
    assert layout.DEFAULT_HOST == DEFAULT_HOST


def test_the_default_host_is_the_first_registered() -> None:
    assert REGISTERED[0].name == DEFAULT_HOST
