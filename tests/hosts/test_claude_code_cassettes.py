"""Claude Code's per-run request values become placeholders; cassettes are named per host."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_skill_eval.hosts.registry import registration_for
from pytest_skill_eval.modelserver.placeholders import normalise_request, request_sha256
from pytest_skill_eval.modelserver.scriptpaths import cassette_file, script_path


def body(home: str, device: str, session: str, date: str, workspace: str) -> dict[str, object]:
    """A Claude Code request body with the values that change from run to run."""
    user_id = {"device_id": device, "account_uuid": "", "session_id": session}
    skill = f"Base directory for this skill: {home}/home/.claude/skills/note-taker"
    environment = f" - Primary working directory: {workspace}\n\nToday's date is {date}."
    return {
        "messages": [{"role": "user", "content": [{"type": "text", "text": skill}]}],
        "system": [{"type": "text", "text": environment}],
        "metadata": {"user_id": json.dumps(user_id, separators=(",", ":"))},
    }


def test_claude_codes_per_run_values_normalise_away() -> None:
    first = body(
        "/tmp/skill-eval-claude-code-11fwi2kj", "cc5b" * 16, "ca80-1f", "2026-12-01", "/r/1/ws"
    )
    second = body(
        "/var/t/skill-eval-claude-code-5x_exnzu", "bc97" * 16, "63a9-ff", "2027-01-02", "/r/2/ws"
    )
    stamps = registration_for("claude-code").request_stamps
    normal = [
        normalise_request(b, {"workspace": w}, stamps)
        for b, w in ((first, "/r/1/ws"), (second, "/r/2/ws"))
    ]
    assert request_sha256(normal[0]) == request_sha256(normal[1])
    text = json.dumps(normal[0])
    for name in ("host_home", "device_id", "session_id", "date", "workspace"):
        assert "{{" + name + "}}" in text


def test_each_host_declares_its_own_per_run_values() -> None:
    """A date line is a host's own: another host's route leaves it as written."""
    dated = {"system": [{"type": "text", "text": "Today's date is 2026-12-01."}]}
    for host, stamped in (("claude-code", True), ("pi", False), ("codex", False)):
        normal = normalise_request(dated, {}, registration_for(host).request_stamps)
        assert ("{{date}}" in json.dumps(normal)) is stamped, host


def test_a_host_other_than_pi_records_and_replays_its_own_cassette(tmp_path: Path) -> None:
    group = tmp_path / "g"
    assert cassette_file(tmp_path, "g", "candidate") == group / "candidate.yaml"
    own = cassette_file(tmp_path, "g", "candidate", 2, "claude-code")
    assert own == group / "candidate@claude-code-trial2.yaml"
    group.mkdir()
    (group / "candidate.yaml").write_text("")
    # A script without a host in its name serves every host …
    assert script_path(tmp_path, "g", "candidate", 2, "claude-code") == group / "candidate.yaml"
    # … and the host's own recording comes first; Pi never reads it.
    (group / "candidate@claude-code.yaml").write_text("")
    assert script_path(tmp_path, "g", "candidate", 2, "claude-code") == (
        group / "candidate@claude-code.yaml"
    )
    own.write_text("")
    assert script_path(tmp_path, "g", "candidate", 2, "claude-code") == own
    assert script_path(tmp_path, "g", "candidate", 2) == group / "candidate.yaml"
