"""Write-once evidence, manifests and the state rules."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_skill_eval.commands.cli import main as cli_main
from pytest_skill_eval.evidence import (
    DamagedEvidenceError,
    EvidenceError,
    batch_state,
    create_result_dir,
    group_state,
    new_result_id,
    shapes,
    verify_group,
    write_json_once,
    write_manifest,
    write_once,
    write_seal,
)
from pytest_skill_eval.evidence.read import MAX_JSON_BYTES, json_depth, read_evidence_json


def test_result_ids_are_timestamp_and_random_hex() -> None:
    assert re.fullmatch(r"\d{14}-[0-9a-f]{8}", new_result_id())


def test_result_directories_are_never_reused(tmp_path: Path) -> None:
    ids = {create_result_dir(tmp_path)[0] for _ in range(5)}
    assert len(ids) == 5


def test_write_once_refuses_to_overwrite_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "run.json"
    write_json_once(target, {"a": 1})
    with pytest.raises(EvidenceError, match="never rewritten"):
        write_once(target, b"other")
    assert target.read_text() == '{\n  "a": 1\n}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]


def _group(tmp_path: Path) -> Path:
    group = tmp_path / "result" / "groups" / "g"
    (group / "baseline" / "workspace").mkdir(parents=True)
    write_once(group / "baseline" / "run.json", b"{}\n")
    write_once(group / "baseline" / "workspace" / "out.txt", b"hello")
    (group / "baseline" / "workspace" / "link").symlink_to("out.txt")
    write_manifest(group)
    return group


def test_manifest_verifies_clean_and_names_a_changed_byte(tmp_path: Path) -> None:
    group = _group(tmp_path)
    assert verify_group(group) == []
    target = group / "baseline" / "workspace" / "out.txt"
    target.write_bytes(b"hellO")
    assert verify_group(group) == [f"changed: {target}"]


def test_manifest_reports_missing_and_extra_files(tmp_path: Path) -> None:
    group = _group(tmp_path)
    (group / "baseline" / "run.json").unlink()
    (group / "baseline" / "planted.txt").write_text("x")
    problems = verify_group(group)
    assert f"missing: {group / 'baseline' / 'run.json'}" in problems
    assert f"extra: {group / 'baseline' / 'planted.txt'}" in problems


def test_verify_command_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    group = _group(tmp_path)
    result = group.parents[1]
    write_json_once(result / "invocation.json", {})
    write_json_once(result / "summary.json", {})
    assert cli_main(["verify", str(result)]) == 1  # not sealed yet
    write_seal(result)
    assert cli_main(["verify", str(result)]) == 0
    (group / "baseline" / "workspace" / "out.txt").write_bytes(b"x")
    assert cli_main(["verify", str(result)]) == 1
    assert "out.txt" in capsys.readouterr().out
    assert cli_main(["verify", str(tmp_path / "nope")]) == 2


def test_group_and_batch_states_follow_the_reference() -> None:
    both = {"baseline": True, "candidate": True}
    only_candidate = {"baseline": False, "candidate": True}
    complete = {"baseline": "complete", "candidate": "complete"}
    assert group_state(complete, both, "complete", False) == "complete"
    assert group_state(complete, both, "grade-error", False) == "partially-complete"
    assert group_state(complete, both, "complete", True) == "invalid"
    failed = {"baseline": "infrastructure-failed", "candidate": "complete"}
    assert group_state(failed, both, "complete", False) == "partially-complete"
    assert group_state(failed, only_candidate, "unavailable", False) == "complete"
    cancelled = {"baseline": "cancelled", "candidate": "complete"}
    assert group_state(cancelled, both, "complete", True) == "cancelled"
    assert batch_state(["complete", "complete"]) == "complete"
    assert batch_state(["complete", "invalid"]) == "partially-complete"
    assert batch_state(["invalid", "cancelled"]) == "cancelled"


def test_the_seal_plans_the_groups_of_several_selectors() -> None:
    from pytest_skill_eval.evidence.seal import planned_groups

    groups = [{"id": "a", "position": 1}, {"id": "b", "position": 2}, {"id": "c", "position": 3}]
    invocation = {"definitions": [{"groups": groups}], "selection": {"group": ["c", "1"]}}
    assert planned_groups(invocation) == ["a", "c"]
    invocation["selection"] = {"group": "2"}
    assert planned_groups(invocation) == ["b"]


# ---------------------------------------------------------------------------------------------
# The one reader: bounded, never through a symlink or into a FIFO, every damage one line.


@pytest.mark.parametrize(
    ("plant", "problem"),
    [
        pytest.param(lambda p: os.truncate(p, MAX_JSON_BYTES + 1), "larger than 64 MiB", id="huge"),
        pytest.param(
            lambda p: p.write_text("[" * 101 + "]" * 101), "nested deeper than 100", id="deep"
        ),
        pytest.param(lambda p: p.write_bytes(b'{"a": "\xff"}'), "not UTF-8 (byte 7)", id="utf8"),
        pytest.param(lambda p: p.write_text("{"), "not valid JSON", id="json"),
        pytest.param(lambda p: os.mkfifo(p), "a special file where", id="fifo"),
        pytest.param(lambda p: p.mkdir(), "a directory where", id="directory"),
        pytest.param(lambda p: p.symlink_to(p.name), "a symbolic link where", id="loop"),
        pytest.param(
            lambda p: p.symlink_to(p.with_name("real.json")), "a symbolic link where", id="link"
        ),
        pytest.param(
            lambda p: p.write_text('{"state": 1, "groups": []}'), "at /state: input", id="type"
        ),
    ],
)
def test_the_reader_turns_each_damage_into_one_line_naming_the_file(
    tmp_path: Path, plant: Callable[[Path], object], problem: str
) -> None:
    (tmp_path / "real.json").write_text('{"state": "complete", "groups": []}')
    path = tmp_path / "summary.json"
    if not problem.startswith(("a special", "a directory", "a symbolic")):
        path.touch()
    plant(path)
    with pytest.raises(DamagedEvidenceError) as caught:
        read_evidence_json(path, shapes.SUMMARY)
    assert str(caught.value).startswith(f"{path}: {problem}")
    assert caught.value.exit_code == 2


def test_nesting_is_counted_outside_strings_only() -> None:
    assert json_depth('{"a": [1, {"b": "[[[[{{{{"}], "c": "\\\\\\"]]]"}') == 3
    assert json_depth('"[[[["') == 0
