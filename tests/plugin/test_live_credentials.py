"""A live run explains a host's refusal with the credential to declare, and a live run that
declares no credential at all is refused before any subject starts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.definitions import Group
from pytest_skill_eval.evidence import layout
from pytest_skill_eval.hosts.credentials import (
    MissingCredentialsError,
    refuse_live_without_credentials,
)
from pytest_skill_eval.hosts.failures import credential_refusal
from pytest_skill_eval.hosts.observation import Observation
from tests.support.files import read_json
from tests.support.roots import body_group, make_root, runtime
from tests.support.runs import results, skill_eval_args

KEYS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "OPENAI_API_KEY")


def _no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*KEYS, "ANTHROPIC_OAUTH_TOKEN", "CODEX_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def _two_hosts(root: Path) -> Path:
    """Two groups that declare no credential: one on Pi, one on Codex."""
    groups = [
        body_group("on-pi", model={"model": "anthropic/claude-sonnet-4-5"}, expectations=[]),
        body_group(
            "on-codex",
            model={"model": "openai/gpt-4.1"},
            expectations=[],
            runtime=runtime(host="codex"),
        ),
    ]
    return make_root(root, groups, {})


@pytest.mark.pi  # the run checks its hosts' binaries before refusing
def test_a_live_run_with_no_credential_declared_is_refused_before_any_subject_starts(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_keys(monkeypatch)
    root = _two_hosts(tmp_path / "root")

    result = pytester.runpytest_subprocess(*skill_eval_args(root, cassettes=False))

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    (line,) = [ln for ln in result.stderr.lines if ln.startswith("ERROR:")]
    assert "--skill-eval-cassettes DIR" in line
    assert "group 'on-pi' (anthropic/claude-sonnet-4-5 on pi): name ANTHROPIC_API_KEY in " in line
    assert "skill_eval_pi_auth" in line
    assert "group 'on-codex' (openai/gpt-4.1 on codex): name OPENAI_API_KEY in " in line
    assert not (root / ".skill-eval").exists()  # no subject started, no result written


@pytest.mark.pi  # the run checks its hosts' binaries before refusing
def test_k_narrows_the_credential_check_as_skill_eval_group_does(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_keys(monkeypatch)
    root = _two_hosts(tmp_path / "root")
    for narrowing in (["-k", "on-codex"], ["--skill-eval-group", "on-codex"]):
        result = pytester.runpytest_subprocess(*skill_eval_args(root, *narrowing, cassettes=False))
        assert result.ret == pytest.ExitCode.USAGE_ERROR, narrowing
        (line,) = [ln for ln in result.stderr.lines if ln.startswith("ERROR:")]
        assert "group 'on-codex'" in line, narrowing
        assert "on-pi" not in line, narrowing
    # An expression over the items' names: the variant of one group's items.
    result = pytester.runpytest_subprocess(
        *skill_eval_args(root, "-k", "on-pi and baseline", cassettes=False)
    )
    (line,) = [ln for ln in result.stderr.lines if ln.startswith("ERROR:")]
    assert "group 'on-pi'" in line
    assert "on-codex" not in line


def _group(host: str = "pi", inherit: tuple[str, ...] = (), model: str = "anthropic/m") -> Group:
    profile = runtime(host=host)
    profile["environment"]["inherit"] = list(inherit)
    return Group.model_validate(
        body_group("g", model={"model": model}, expectations=[], runtime=profile)
    )


@pytest.mark.parametrize(
    ("group", "models", "auth", "declared"),
    [
        pytest.param(_group(), {}, None, False, id="pi-nothing"),
        pytest.param(_group(inherit=("ANTHROPIC_API_KEY",)), {}, None, True, id="pi-inherit"),
        pytest.param(_group(inherit=("MY_GATEWAY_TOKEN",)), {}, None, True, id="pi-own-name"),
        pytest.param(_group(inherit=("LANG",)), {}, None, False, id="pi-not-a-key"),
        pytest.param(_group(), {}, Path("auth.json"), True, id="pi-auth"),
        pytest.param(_group(), {"anthropic": {"apiKey": "K"}}, None, True, id="pi-models-key"),
        pytest.param(_group(), {"anthropic": {}}, None, False, id="pi-models-no-key"),
        pytest.param(_group("codex", model="openai/m"), {}, Path("a"), False, id="codex-auth"),
        pytest.param(
            _group("codex", ("CODEX_API_KEY",), "openai/m"), {}, None, True, id="codex-key"
        ),
    ],
)
def test_what_counts_as_a_declared_credential(
    group: Group, models: dict[str, Any], auth: Path | None, declared: bool
) -> None:
    if declared:
        refuse_live_without_credentials([group], models, auth)
    else:
        with pytest.raises(MissingCredentialsError, match="--skill-eval-cassettes DIR"):
            refuse_live_without_credentials([group], models, auth)


@pytest.mark.pi
@pytest.mark.claude
def test_claude_code_not_logged_in_is_recognised_and_names_the_key_to_declare(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_keys(monkeypatch)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "")  # declared and inherited, but empty
    host = runtime(host="claude-code")
    host["environment"]["inherit"] = ["ANTHROPIC_API_KEY"]
    group = body_group(
        "answer", model={"model": "anthropic/claude-sonnet-4-5"}, expectations=[], runtime=host
    )
    root = make_root(tmp_path / "root", [group], {})

    args = skill_eval_args(root, "--skill-eval-variant", "baseline", cassettes=False)
    result = pytester.runpytest_subprocess(*args)

    assert result.ret == 1
    result.stdout.fnmatch_lines(
        ["*hint: the subject's model call failed (*Not logged in*); no credentials reached it: "
         "name ANTHROPIC_API_KEY in runtime.environment.inherit"]
    )  # fmt: skip
    record = read_json(
        results(root)[-1] / "groups" / "answer@claude-code" / "baseline" / "run.json"
    )
    assert "Not logged in" in record["hint"]
    assert "ANTHROPIC_API_KEY" in record["error"]["message"]


@pytest.mark.parametrize(
    "stderr",
    [
        "No API key found for the selected model.\n\nSee …/pi-coding-agent/docs/models.md\n",
        "Not logged in · Please run /login\n",
        'ERROR: unexpected status 401 Unauthorized: {"code": "invalid_api_key"}\nRetrying…\n',
    ],
    ids=["pi-first-line", "claude-code", "codex"],
)
def test_a_refusal_anywhere_in_stderr_is_recognised(tmp_path: Path, stderr: str) -> None:
    (tmp_path / layout.STDERR).write_text(stderr, encoding="utf-8")
    assert credential_refusal(None, Observation(), tmp_path) == stderr.splitlines()[0]
