"""A group cannot pass a variable of its host's isolation: refused at collection, per host."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.commands.cli import main as skill_eval
from tests.support.runs import skill_eval_args

GROUP = Path("groups") / "natural-activation.json"


def _declare(root: Path, host: str | None, literal: dict[str, str], inherit: list[str]) -> Path:
    """The example's description group with `runtime.environment` (and `runtime.host`) set."""
    path = root / GROUP
    group: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    group["runtime"] = {
        "host": host or "pi",
        "prompt": "isolated",
        "session": False,
        "extensions": [],
        "environment": {"literal": literal, "inherit": inherit},
    }
    path.write_text(json.dumps(group), encoding="utf-8")
    return path


def _collect(pytester: pytest.Pytester, root: Path, *extra: str) -> pytest.RunResult:
    __tracebackhide__ = True
    args = skill_eval_args(root, *extra, suite=root / GROUP, cassettes=False)
    return pytester.runpytest_inprocess("--collect-only", "-q", *args)


def _refused(result: pytest.RunResult, line: str) -> None:
    __tracebackhide__ = True
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()
    output = result.stdout.str()
    assert line in result.outlines, output
    assert "Traceback" not in output
    assert "[baseline" not in output  # no item of the file was collected


@pytest.mark.parametrize(
    ("host", "name"),
    [("pi", "XDG_CONFIG_HOME"), ("claude-code", "CLAUDE_CONFIG_DIR"), ("codex", "CODEX_HOME")],
)
def test_a_declared_host_refuses_a_literal_of_its_isolation(
    pytester: pytest.Pytester, example_root: Path, host: str, name: str
) -> None:
    path = _declare(example_root, host, {"REGION": "eu", name: "/root/.config"}, [])
    _refused(
        _collect(pytester, example_root),
        f"{path}: /runtime/environment/literal/{name}: {name} belongs to the subject's isolation "
        f"on runtime.host {host}: the evaluator sets it, or it steers the host's home, "
        "configuration, telemetry or model endpoint, so a definition cannot pass it; "
        "remove it from runtime.environment.literal",
    )


@pytest.mark.parametrize(
    ("host", "name"),
    [("pi", "TMPDIR"), ("claude-code", "ANTHROPIC_BASE_URL"), ("codex", "OPENAI_BASE_URL")],
)
def test_a_chosen_host_refuses_an_inherited_variable_of_its_isolation(
    pytester: pytest.Pytester, example_root: Path, host: str, name: str
) -> None:
    # Declared on Pi (where only TMPDIR is Pi's), run on the host the invocation chose.
    path = _declare(example_root, None, {}, ["HTTPS_PROXY", name])
    _refused(
        _collect(pytester, example_root, "--skill-eval-host", host),
        f"{path}: /runtime/environment/inherit/1: {name} belongs to the subject's isolation "
        f"on --skill-eval-host {host}: the evaluator sets it, or it steers the host's home, "
        "configuration, telemetry or model endpoint, so a definition cannot pass it; "
        "remove it from runtime.environment.inherit",
    )


@pytest.mark.parametrize(
    ("host", "inherit"),
    [
        ("pi", ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "HTTPS_PROXY", "ANTHROPIC_BASE_URL"]),
        ("claude-code", ["ANTHROPIC_API_KEY", "HTTPS_PROXY", "NO_PROXY", "OPENAI_BASE_URL"]),
        ("codex", ["OPENAI_API_KEY", "CODEX_API_KEY", "HTTPS_PROXY", "CLAUDE_CONFIG_DIR"]),
    ],
)
def test_provider_keys_and_other_hosts_variables_stay_allowed(
    pytester: pytest.Pytester, example_root: Path, host: str, inherit: list[str]
) -> None:
    # What the live-run docs tell users to inherit, and names only another host owns.
    _declare(example_root, host, {"REGION": "eu"}, inherit)
    result = _collect(pytester, example_root)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert any("natural-activation[candidate" in line for line in result.outlines)


def test_a_plan_refuses_the_group_before_any_shard_runs(
    example_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _declare(example_root, None, {}, ["CLAUDE_CONFIG_DIR"])
    out = tmp_path / "plan.json"
    argv = ["plan", str(path), "--root", str(example_root), "-o", str(out)]
    assert skill_eval([*argv, "--host", "claude-code"]) != 0
    err = capsys.readouterr().err
    assert f"{path}: /runtime/environment/inherit/0: CLAUDE_CONFIG_DIR belongs" in err
    assert err.count("\n") == 1
    assert not out.exists()
    # On Pi, which the group declares, the name is nobody's: the plan is made.
    assert skill_eval(argv) == 0
