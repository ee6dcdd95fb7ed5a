"""Pi agent-directory files (`models.json`, `settings.json`) that point Pi at its model."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_skill_eval.errors import ModelProviderError
from pytest_skill_eval.modelserver.server import Route
from pytest_skill_eval.modelserver.wire import APIS, OPENAI

DEFAULT_PROVIDER = "skill-eval"
DEFAULT_MODEL = "scripted"
# Pi reads an apiKey that names an existing env var from that variable; hyphens make this
# literal impossible as a POSIX variable name, so it is always used as written.
SCRIPTED_API_KEY = "skill-eval-scripted-key-not-a-variable"
# Scripted traffic costs nothing unless a caller asks Pi to price it.
ZERO_COST: Mapping[str, float] = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
_COST_KEYS = ("input", "output", "cacheRead", "cacheWrite")


class ModelSpecError(ModelProviderError, ValueError):
    """A declared model that is not `provider/model`."""


def split_model(declared: str | None) -> tuple[str, str]:
    """Split a declared `provider/model` on the first "/"; None gives the scripted default."""
    if declared is None:
        return DEFAULT_PROVIDER, DEFAULT_MODEL
    provider, sep, model_id = declared.partition("/")
    if not sep or not provider or not model_id:
        raise ModelSpecError(
            f"model {declared!r} must be written provider/model, e.g. anthropic/claude-sonnet-4-5"
        )
    return provider, model_id


def pi_agent_files(
    route: Route,
    *,
    api: str = OPENAI,
    provider: str = DEFAULT_PROVIDER,
    model_id: str = DEFAULT_MODEL,
    cost: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """The `models.json` content routing `provider/model_id` to `route` over `api`."""
    if api not in APIS:
        raise ValueError(f"unsupported api {api!r}; expected one of {', '.join(APIS)}")
    prices = dict(ZERO_COST if cost is None else cost)
    missing = [key for key in _COST_KEYS if key not in prices]
    if missing:
        raise ValueError(f"cost lacks {', '.join(missing)} (USD per million tokens)")
    model: dict[str, Any] = {
        "id": model_id,
        "name": model_id,
        "reasoning": False,
        "input": ["text"],
        "contextWindow": 200000,
        "maxTokens": 4096,
        "cost": {key: prices[key] for key in _COST_KEYS},
    }
    entry: dict[str, Any] = {
        "baseUrl": route.base_url(api),
        "api": api,
        "apiKey": SCRIPTED_API_KEY,
        "models": [model],
    }
    if api == OPENAI:
        entry["compat"] = {"supportsDeveloperRole": False, "supportsReasoningEffort": False}
    return {"providers": {provider: entry}}


def settings_json(
    provider: str = DEFAULT_PROVIDER, model_id: str = DEFAULT_MODEL
) -> dict[str, Any]:
    """The `settings.json` content: retries and compaction off, quiet, no telemetry."""
    return {
        "defaultProvider": provider,
        "defaultModel": model_id,
        "defaultThinkingLevel": "off",
        "quietStartup": True,
        "enableInstallTelemetry": False,
        # Without provider maxRetries 0 the SDK retries a 5xx by itself and eats script turns.
        "retry": {"enabled": False, "provider": {"maxRetries": 0}},
        "compaction": {"enabled": False},
    }


def live_settings_json() -> dict[str, Any]:
    """`settings.json` for a live run: the same quiet, retry-free Pi, its model left to argv."""
    settings = settings_json()
    for key in ("defaultProvider", "defaultModel"):
        settings.pop(key)
    return settings


def write_pi_agent_dir(
    agent_dir: Path,
    route: Route,
    *,
    api: str = OPENAI,
    provider: str = DEFAULT_PROVIDER,
    model_id: str = DEFAULT_MODEL,
    cost: Mapping[str, float] | None = None,
) -> None:
    """Write `models.json` and `settings.json` for `route` into `agent_dir` (created if needed)."""
    agent_dir.mkdir(parents=True, exist_ok=True)
    models = pi_agent_files(route, api=api, provider=provider, model_id=model_id, cost=cost)
    files = {"models.json": models, "settings.json": settings_json(provider, model_id)}
    for name, content in files.items():
        (agent_dir / name).write_text(json.dumps(content, indent=2) + "\n", encoding="utf-8")
