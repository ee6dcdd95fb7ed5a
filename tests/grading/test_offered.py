"""`skill-read` with `offered`: the target's offer (run.json's `activation.offered`) graded with
the read; a run that could not see the offer is `unavailable`, a variant without a target meets
either."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.grading.grading_evidence import Built, grade, group, only_check, synthetic_run
from tests.grading.grading_scenarios import (
    DESCRIPTION_PROMPTS,
    description_run,
    targetless_description_run,
)

READ_BY_TWO = {"kind": "skill-read", "expect": "by-turn", "turn": 2}


def _with_offered(built: Built, offered: str | None) -> Built:
    run: dict[str, Any] = json.loads((built.run_dir / "run.json").read_text())
    run["activation"]["offered"] = offered
    data = (json.dumps(run) + "\n").encode()
    (built.run_dir / "run.json").write_bytes(data)
    return Built(run=json.loads(data), run_dir=built.run_dir, sha256=built.sha256)


def _check(built: Built, tmp_path: Path, variant: str, **asked: Any) -> dict[str, Any]:
    other = "baseline" if variant == "candidate" else "candidate"
    counterpart = synthetic_run(tmp_path, other, "not-selected", DESCRIPTION_PROMPTS, "description")
    expectation = {"id": "under-test", "variant": variant, **READ_BY_TWO, **asked}
    definition = group("description", [expectation], DESCRIPTION_PROMPTS)
    pair = (built, counterpart) if variant == "baseline" else (counterpart, built)
    return only_check(grade(definition, *pair))


@pytest.mark.parametrize(
    ("offered", "asked", "state"),
    [
        ("intact", True, "pass"),
        ("cut", True, "fail"),
        ("absent", True, "fail"),
        ("altered", True, "fail"),
        ("cut", False, "pass"),
        ("intact", False, "fail"),
        ("unobservable", True, "unavailable"),
    ],
)
def test_offered_is_graded_with_the_read(
    offered: str, asked: bool, state: str, tmp_path: Path
) -> None:
    built = _with_offered(description_run(tmp_path, "candidate"), offered)
    check = _check(built, tmp_path, "candidate", offered=asked)
    assert check["state"] == state
    assert check["expected"] == {"read": "by-turn", "turn": 2, "offered": asked}
    if state != "unavailable":
        assert check["observed"]["offered"] == offered


def test_a_run_from_before_the_offer_was_recorded_is_unavailable(tmp_path: Path) -> None:
    check = _check(description_run(tmp_path, "candidate"), tmp_path, "candidate", offered=True)
    assert check["state"] == "unavailable"


def test_without_offered_the_check_is_what_it_was(tmp_path: Path) -> None:
    built = _with_offered(description_run(tmp_path, "candidate"), "absent")
    check = _check(built, tmp_path, "candidate")
    assert check["state"] == "pass"
    assert check["expected"] == {"read": "by-turn", "turn": 2}
    assert "offered" not in check["observed"]


def test_a_variant_without_a_target_meets_offered(tmp_path: Path) -> None:
    built = targetless_description_run(tmp_path, "baseline")
    never = {"kind": "skill-read", "expect": "never", "offered": True}
    counterpart = synthetic_run(
        tmp_path, "candidate", "not-selected", DESCRIPTION_PROMPTS, "description"
    )
    definition = group(
        "description", [{"id": "t", "variant": "baseline", **never}], DESCRIPTION_PROMPTS
    )
    check = only_check(grade(definition, built, counterpart))
    assert check["state"] == "pass"
    assert check["observed"]["offered"] is None
