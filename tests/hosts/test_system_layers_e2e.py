"""A host's system-wide and managed layers never reach a subject: planted in /etc (in a private
mount namespace, never the real one), the invocation is refused before any subject starts."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_skill_eval.hosts.claude_code.registration import SYSTEM_LAYERS as CLAUDE_CODE_LAYERS
from tests.support.files import write
from tests.support.hosts import MARKS
from tests.support.namespaces import with_layered_etc
from tests.support.roots import Group, build, runtime, skill, variant
from tests.support.runs import (
    model_requests,
    result_dir,
    run_candidate,
    run_record,
    skill_eval_args,
)

pytestmark = pytest.mark.pi

ENV_CANARY = "managed-env-canary-4242"


def _hooks(canary: Path) -> dict[str, object]:
    """Managed settings whose PreToolUse hook writes `canary` and whose env reaches commands."""
    hook = {"type": "command", "command": f"touch {canary}"}
    return {
        "hooks": {"PreToolUse": [{"matcher": "*", "hooks": [hook]}]},
        "env": {"LAYER_CANARY": ENV_CANARY},
    }


def _group(root: Path, host: str) -> Group:
    """A group whose subject reads a file and, where the host offers declared commands, prints
    its environment: a layer's hook would run, and its `env` would show."""
    write(root / "fixture" / "notes.txt", "alpha\n")
    commands = host == "claude-code"
    script: list[dict[str, object]] = [
        {"tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]}
    ]
    if commands:
        script.append({"tool_calls": [{"name": "run_command", "arguments": {"command": "env"}}]})
    return Group(
        id="layers",
        turns=["Check the notes."],
        tools=["read", "run_command"] if commands else ["read"],
        runtime=runtime(host=host),
        candidate=variant([skill(root, "note-taker")], 0),
        commands=[{"id": "env", "argv": ["env"]}] if commands else None,
        scripts={"candidate": [*script, {"text": "Checked."}]},
    )


def _run_with_etc(
    pytester: pytest.Pytester, upper: Path, root: Path, suite: Path
) -> pytest.RunResult:
    """The suite run by a child pytest that sees `upper` laid over /etc."""
    basetemp = pytester.path.parent / f"{pytester.path.name}-basetemp"
    args = skill_eval_args(root, "--skill-eval-variant", "candidate", suite=suite)
    command = [sys.executable, "-m", "pytest", f"--basetemp={basetemp}", *args]
    return pytester.run(*with_layered_etc(upper, command), timeout=300)


def _assert_refused_before_any_subject(
    result: pytest.RunResult, root: Path, named: tuple[str, ...], canary: Path
) -> None:
    __tracebackhide__ = True
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, output  # not a failed (or passed) run
    refusals = [line for line in output.splitlines() if "system-wide configuration" in line]
    assert len(refusals) == 1, output
    for name in named:
        assert name in refusals[0], output
    assert "Traceback" not in output, output
    assert not list(root.glob(".skill-eval/runs/*/groups")), output  # no group ever started
    assert not canary.exists()  # no hook of the layer ran
    for path in root.rglob("*"):
        if path.is_file():
            assert ENV_CANARY.encode() not in path.read_bytes(), path


@dataclass(frozen=True)
class Layer:
    """A system-wide layer of one host, planted under /etc: what the refusal must name."""

    host: str
    planted: str  # below /etc
    content: Callable[[Path], str]  # the file's, given the canary a hook in it would touch
    named: tuple[str, ...]  # each in the one line that refuses the invocation


def _text(content: str) -> Callable[[Path], str]:
    return lambda canary: content


def _hooks_file(canary: Path) -> str:
    return json.dumps(_hooks(canary))


def _mcp_file(canary: Path) -> str:
    return json.dumps({"mcpServers": {"managed": {"command": "touch", "args": [str(canary)]}}})


LAYERS = {
    "claude-code-managed-settings": Layer(
        "claude-code",
        "claude-code/managed-settings.json",
        _hooks_file,
        ("/etc/claude-code/managed-settings.json",),
    ),
    "claude-code-drop-in": Layer(
        "claude-code",
        "claude-code/managed-settings.d/50-hooks.json",
        _hooks_file,
        ("/etc/claude-code/managed-settings.d (managed settings drop-ins: '50-hooks.json')",),
    ),
    "claude-code-managed-mcp": Layer(
        "claude-code",
        "claude-code/managed-mcp.json",
        _mcp_file,
        ("/etc/claude-code/managed-mcp.json",),
    ),
    "claude-code-managed-memory": Layer(
        "claude-code",
        "claude-code/CLAUDE.md",
        _text(f"Always print {ENV_CANARY}.\n"),
        ("/etc/claude-code/CLAUDE.md",),
    ),
    "claude-code-managed-skills": Layer(
        "claude-code",
        "claude-code/.claude/skills/managed/SKILL.md",
        _text(f"---\nname: managed\ndescription: {ENV_CANARY}\n---\nx\n"),
        ("/etc/claude-code/.claude",),
    ),
    "codex-config": Layer(
        "codex",
        "codex/config.toml",
        _text(f'[shell_environment_policy]\nset = {{ LAYER_CANARY = "{ENV_CANARY}" }}\n'),
        ("/etc/codex/config.toml",),
    ),
    # Codex reads command rules from /etc/codex/rules too: this one would refuse the `cat` the
    # subject's read becomes.
    "codex-rules": Layer(
        "codex",
        "codex/rules/50-forbid.rules",
        _text('prefix_rule(pattern=["cat"], decision="forbidden")\n'),
        ("/etc/codex/rules (system command rules: '50-forbid.rules')",),
    ),
    # Gemini CLI reads /etc/gemini-cli whatever HOME says: its system settings (moved into the
    # run's home by the launch, yet refused where they exist) and its system policies, which
    # nothing moves.
    "gemini-cli-settings": Layer(
        "gemini-cli",
        "gemini-cli/settings.json",
        _text(
            json.dumps(
                {"hooks": {"BeforeTool": [{"matcher": "*", "hooks": [{"type": "command"}]}]}}
            )
        ),
        ("/etc/gemini-cli (system settings, system defaults and system policies:",),
    ),
    "gemini-cli-policies": Layer(
        "gemini-cli",
        "gemini-cli/policies/50-deny.toml",
        _text('[[rule]]\ntoolName = "read_file"\ndecision = "deny"\npriority = 900\n'),
        ("/etc/gemini-cli (system settings, system defaults and system policies:",),
    ),
    # opencode's managed configuration directory.
    "opencode-config": Layer(
        "opencode",
        "opencode/opencode.json",
        _text(json.dumps({"instructions": [f"/tmp/{ENV_CANARY}.md"]})),
        ("/etc/opencode (managed configuration", "opencode.json"),
    ),
    "opencode-instructions": Layer(
        "opencode",
        "opencode/AGENTS.md",
        _text(f"Always print {ENV_CANARY}.\n"),
        ("/etc/opencode (managed configuration", "AGENTS.md"),
    ),
    # Copilot CLI's device managed settings.
    "copilot-cli-managed-settings": Layer(
        "copilot-cli",
        "github-copilot/managed-settings.json",
        _hooks_file,
        ("/etc/github-copilot/managed-settings.json",),
    ),
}


@pytest.mark.parametrize(
    "layer",
    [pytest.param(v, id=k, marks=MARKS.get(v.host, ())) for k, v in LAYERS.items()],
)
def test_a_system_layer_refuses_the_invocation(pytester: pytest.Pytester, layer: Layer) -> None:
    canary = pytester.path / "hook-ran"
    upper = pytester.path / "etc-upper"
    write(upper / layer.planted, layer.content(canary))
    root = pytester.path / "root"
    suite = build(root, [_group(root, layer.host)])

    result = _run_with_etc(pytester, upper, root, suite)

    _assert_refused_before_any_subject(result, root, layer.named, canary)
    assert not os.path.lexists(f"/etc/{layer.planted}")  # the real /etc never saw it


@pytest.mark.claude
def test_a_claude_code_run_records_each_layer_it_kept_out(pytester: pytest.Pytester) -> None:
    root = pytester.path / "root"
    result = run_candidate(pytester, root, [_group(root, "claude-code")])

    assert result.ret == 0, result.stdout.str()
    run = run_record(root, "layers@claude-code", "candidate")
    assert run["state"] == "complete", run["error"]
    assert run["systemLayers"] == [
        {"path": str(layer.path), "kept": "absent"} for layer in CLAUDE_CODE_LAYERS
    ]
    assert {"path": "/etc/claude-code/managed-settings.json", "kept": "absent"} in run[
        "systemLayers"
    ]


@pytest.mark.claude
def test_a_layer_planted_by_one_subject_never_reaches_the_next(pytester: pytest.Pytester) -> None:
    canary = pytester.path / "hook-ran"
    planted = "/etc/claude-code/managed-settings.json"
    settings = json.dumps(_hooks(canary))
    root = pytester.path / "root"
    write(root / "fixture" / "notes.txt", "alpha\n")
    group = Group(
        id="planter",
        turns=["Check the notes."],
        tools=["read", "run_command"],
        runtime=runtime(host="claude-code"),
        baseline=variant(),
        candidate=variant([skill(root, "note-taker")], 0),
        # The baseline's subject runs as the operator, who may write /etc (root here).
        commands=[
            {
                "id": "plant",
                "argv": ["sh", "-c", f"mkdir -p /etc/claude-code && echo '{settings}' > {planted}"],
            }
        ],
        scripts={
            "baseline": [
                {"tool_calls": [{"name": "run_command", "arguments": {"command": "plant"}}]},
                {"text": "Planted."},
            ],
            "candidate": [
                {"tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]},
                {"text": "Checked."},
            ],
        },
    )
    suite = build(root, [group])
    basetemp = pytester.path.parent / f"{pytester.path.name}-basetemp"
    command = [sys.executable, "-m", "pytest", f"--basetemp={basetemp}"]
    command += skill_eval_args(root, suite=suite)

    result = pytester.run(*with_layered_etc(pytester.path / "etc-upper", command), timeout=300)

    output = result.stdout.str() + result.stderr.str()
    assert (pytester.path / "etc-upper" / "claude-code" / "managed-settings.json").is_file()
    assert run_record(root, "planter@claude-code", "baseline")["state"] == "complete", output
    candidate = run_record(root, "planter@claude-code", "candidate")
    assert candidate["state"] == "infrastructure-failed", output
    message = candidate["error"]["message"]
    # It never started (not "ran but could not be recorded"), and the error names the layer.
    assert message.startswith("Claude Code would read system-wide configuration"), message
    assert f"{planted} (managed settings)" in message
    assert "Traceback" not in output
    assert not canary.exists()  # the planted hook never ran
    assert not (result_dir(root) / "groups/planter@claude-code/candidate/events.jsonl").exists()
    assert not os.path.lexists(planted)


# Loaded by the child pytest: Codex's layer is a file of the test's own, created by "the
# machine" (here: right after the subject's first turn) while the subject is running.
_PLANT_BETWEEN_TURNS = """
import dataclasses
from pathlib import Path

from pytest_skill_eval.hosts import registry
from pytest_skill_eval.hosts.codex import host as codex_host
from pytest_skill_eval.hosts.layers import SystemLayer
from tests.support.hosts import MARKS

LAYER = Path(__file__).parent / "etc-codex" / "config.toml"
registry.REGISTERED = tuple(
    dataclasses.replace(r, system_layers=(SystemLayer(LAYER, "system configuration"),))
    if r.name == "codex"
    else r
    for r in registry.REGISTERED
)
_init = codex_host.CodexDialogue.__init__


def _planting(self, talk, host):
    def after(turn):
        talk.after_turn(turn)
        LAYER.parent.mkdir(exist_ok=True)
        LAYER.write_text("[shell_environment_policy]\\n", encoding="utf-8")

    _init(self, dataclasses.replace(talk, after_turn=after), host)


codex_host.CodexDialogue.__init__ = _planting
"""


@pytest.mark.codex
def test_a_codex_layer_that_appears_between_turns_stops_the_next_turn(
    pytester: pytest.Pytester,
) -> None:
    # Codex reads /etc/codex as it starts, and may again as a later turn begins: the check
    # runs before every turn, not only before the first.
    pytester.makeconftest(_PLANT_BETWEEN_TURNS)
    layer = pytester.path / "etc-codex" / "config.toml"
    root = pytester.path / "root"
    write(root / "fixture" / "notes.txt", "alpha\n")
    read = {"tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]}
    group = Group(
        id="between",
        turns=["Check the notes.", "Check them again."],
        tools=["read"],
        runtime=runtime(host="codex"),
        candidate=variant([skill(root, "note-taker")], 0),
        scripts={"candidate": [read, {"text": "Checked."}, read, {"text": "Again."}]},
    )
    result = run_candidate(pytester, root, [group])

    output = result.stdout.str() + result.stderr.str()
    assert layer.is_file(), output  # the machine did change between the turns
    run = run_record(root, "between@codex", "candidate")
    assert run["state"] == "infrastructure-failed", output
    assert f"{layer} (system configuration)" in run["error"]["message"]
    assert "Codex would read system-wide configuration" in run["error"]["message"]
    # Turn one ran; no second Codex process was started, so turn two never reached the model.
    assert [turn["turn"] for turn in run["turns"]] == [1]
    variant_dir = result_dir(root) / "groups" / "between@codex" / "candidate"
    assert len(model_requests(variant_dir)) == 2
    assert "Traceback" not in output
