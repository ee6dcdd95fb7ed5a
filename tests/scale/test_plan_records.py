"""Every field of a plan is validated before a shard or a merge follows it: a damaged plan is
one line naming the file and the field, never a traceback; result ids obey the rule every
reader of evidence uses (one directory level)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.commands.cli import main as skill_eval
from pytest_skill_eval.evidence import json_bytes
from tests.support.files import read_json
from tests.support.roots import improving_root


@pytest.fixture
def plan(tmp_path: Path) -> Path:
    root = improving_root(tmp_path / "root", 2)
    out = tmp_path / "plan.json"
    argv = ["plan", str(root / "suite.json"), "--root", str(root), "--trials", "2"]
    assert skill_eval([*argv, "-o", str(out)]) == 0
    return out


def _unit_trial(data: dict[str, Any]) -> None:
    data["units"][0]["trial"] = "1"


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: d["selection"].update(trials="2"), "field selection/trials: Input should be"),
        (lambda d: d.pop("results"), "field results: Field required"),
        (lambda d: d.update(aggregate="../up"), "field aggregate: '../up' is not a safe id"),
        (lambda d: d["results"][1].update(id="a/b"), "field results/1/id: 'a/b' is not a safe"),
        (_unit_trial, "field units/0/trial: Input should be a valid integer"),
        (lambda d: d["units"][0].update(group="nope"), "names a group not in groups"),
        (lambda d: d["units"][0].update(hosts=["x@y"]), "field units/0/hosts/0"),
    ],
)
def test_a_damaged_plan_is_one_line_naming_the_field(
    plan: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    change: Callable[[dict[str, Any]], object],
    expected: str,
) -> None:
    data = read_json(plan)
    change(data)
    damaged = tmp_path / "damaged.json"
    damaged.write_bytes(json_bytes(data))
    out = tmp_path / "out"
    assert skill_eval(["merge", str(damaged), str(tmp_path), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert f"{damaged}: " in err
    assert expected in err
    assert "Traceback" not in err
    assert not out.exists()
