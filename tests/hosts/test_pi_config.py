"""models.json / settings.json builders for the isolated Pi agent directory."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_skill_eval.hosts.pi.config import (
    ModelSpecError,
    live_settings_json,
    pi_agent_files,
    settings_json,
    split_model,
    write_pi_agent_dir,
)
from pytest_skill_eval.modelserver.scripted import DEFAULT_MODEL, DEFAULT_PROVIDER, SCRIPTED_API_KEY
from pytest_skill_eval.modelserver.server import ScriptedModelServer


@pytest.fixture(scope="module")
def model_server() -> Iterator[ScriptedModelServer]:
    """A scripted model server whose routes the generated files point at."""
    with ScriptedModelServer() as server:
        yield server


def test_openai_models_json(model_server: ScriptedModelServer) -> None:
    route = model_server.open_route(None, source=None, placeholders={})
    models = pi_agent_files(
        route, api="openai-completions", provider="skill-eval", model_id="scripted", cost=None
    )
    entry = models["providers"]["skill-eval"]
    assert entry["baseUrl"] == f"{model_server.base_url}/r/{route.token}/v1"
    assert entry["api"] == "openai-completions"
    assert entry["apiKey"] == SCRIPTED_API_KEY
    assert entry["compat"] == {"supportsDeveloperRole": False, "supportsReasoningEffort": False}
    [model] = entry["models"]
    assert model["id"] == "scripted"
    assert model["reasoning"] is False
    assert model["cost"] == {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
    assert list(models["providers"]) == ["skill-eval"]


def test_anthropic_models_json_with_declared_model(model_server: ScriptedModelServer) -> None:
    route = model_server.open_route(None, source=None, placeholders={})
    provider, model_id = split_model("anthropic/claude-sonnet-4-5")
    cost = {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}
    models = pi_agent_files(
        route, api="anthropic-messages", provider=provider, model_id=model_id, cost=cost
    )
    entry = models["providers"]["anthropic"]
    assert entry["baseUrl"] == f"{model_server.base_url}/r/{route.token}"
    assert entry["api"] == "anthropic-messages"
    assert "compat" not in entry
    assert entry["models"][0]["id"] == "claude-sonnet-4-5"
    assert entry["models"][0]["cost"] == cost


def test_api_key_cannot_name_an_env_var() -> None:
    assert not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", SCRIPTED_API_KEY)
    assert not SCRIPTED_API_KEY.startswith("!")


def test_bad_arguments_are_rejected(model_server: ScriptedModelServer) -> None:
    route = model_server.open_route(None, source=None, placeholders={})
    with pytest.raises(ValueError, match="unsupported api"):
        pi_agent_files(route, api="openai-responses", provider="p", model_id="m", cost=None)
    with pytest.raises(ValueError, match="cost lacks cacheRead, cacheWrite"):
        pi_agent_files(
            route,
            api="openai-completions",
            provider="p",
            model_id="m",
            cost={"input": 1, "output": 1},
        )


def test_settings_json() -> None:
    assert settings_json("anthropic", "claude-sonnet-4-5") == {
        "defaultProvider": "anthropic",
        "defaultModel": "claude-sonnet-4-5",
        "defaultThinkingLevel": "off",
        "quietStartup": True,
        "enableInstallTelemetry": False,
        "retry": {"enabled": False, "provider": {"maxRetries": 0}},
        "compaction": {"enabled": False},
    }


def test_split_model() -> None:
    assert split_model(None) == (DEFAULT_PROVIDER, DEFAULT_MODEL) == ("skill-eval", "scripted")
    assert split_model("openrouter/anthropic/claude-3.5") == ("openrouter", "anthropic/claude-3.5")
    for bad in ("no-slash", "/model", "provider/"):
        with pytest.raises(ModelSpecError, match="provider/model"):
            split_model(bad)


def test_write_pi_agent_dir(model_server: ScriptedModelServer, tmp_path: Path) -> None:
    route = model_server.open_route(None, source=None, placeholders={})
    agent = tmp_path / "agent" / "nested"
    write_pi_agent_dir(agent, route, api="openai-completions", provider="x", model_id="y")
    assert sorted(p.name for p in agent.iterdir()) == ["models.json", "settings.json"]
    models = json.loads((agent / "models.json").read_text())
    settings = json.loads((agent / "settings.json").read_text())
    assert models == pi_agent_files(
        route, api="openai-completions", provider="x", model_id="y", cost=None
    )
    assert settings == settings_json("x", "y")


def test_live_settings_leave_the_model_to_argv() -> None:
    expected = settings_json()
    del expected["defaultProvider"], expected["defaultModel"]
    assert live_settings_json() == expected
