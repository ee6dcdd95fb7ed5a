"""Choosing each subject's model endpoint: the loopback scripted server, or the live provider."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .definitions import LoadedGroup
from .models.pi_config import ModelSpecError, pi_agent_files, settings_json, split_model
from .models.script import ScriptError, load_script, script_path
from .models.server import ScriptedModelServer
from .subject.runner import Endpoint

RECORD_MODES = ("none", "once", "all")
# Scripted runs are priced like a typical frontier model (USD per million tokens) so usage and
# cost show up in evidence exactly as they would live; scripted spend is never charged.
SCRIPTED_PRICES = {"input": 3.0, "output": 15.0, "cacheRead": 0.3, "cacheWrite": 3.75}


class EndpointError(Exception):
    """The subject cannot be given a model endpoint (missing or unusable cassette)."""


class EndpointFactory:
    """One per process: starts the loopback server on first use and opens a route per subject."""

    def __init__(
        self, *, cassettes: Path | None, record: str, auth: Path | None, models: Path | None
    ) -> None:
        self.cassettes = cassettes
        self.record = record
        self.auth = auth
        self.models = models
        self._server: ScriptedModelServer | None = None
        self._lock = threading.Lock()

    def _running(self) -> ScriptedModelServer:
        with self._lock:
            if self._server is None:
                server = ScriptedModelServer()
                server.start()
                self._server = server
            return self._server

    def close(self) -> None:
        """Stop the loopback server if it was started."""
        with self._lock:
            if self._server is not None:
                self._server.stop()
                self._server = None

    def endpoint(
        self, loaded: LoadedGroup, variant: str, trial: int, placeholders: Mapping[str, str]
    ) -> Endpoint:
        """The endpoint for one subject run."""
        declared = loaded.group.model
        if self.cassettes is None:
            return self._live(declared.model if declared else None, declared)
        if self.record != "none":
            raise EndpointError(
                f"--skill-eval-record {self.record} is not supported yet; record cassettes "
                "with a live run or write scripts by hand"
            )
        group_id = loaded.group.id
        path = script_path(self.cassettes, group_id, variant, trial)
        if path is None:
            expected = self.cassettes / group_id / f"{variant}.yaml"
            raise EndpointError(
                f"no cassette for group {group_id!r} variant {variant} trial {trial}: "
                f"expected {expected}"
            )
        try:
            script = load_script(path)
            provider, model_id = split_model(declared.model if declared else None)
        except (ScriptError, ModelSpecError) as error:
            raise EndpointError(str(error)) from None
        route = self._running().open_route(script, source=path, placeholders=placeholders)
        model = {"model": f"{provider}/{model_id}"}
        if declared is not None and declared.thinking:
            model["thinking"] = declared.thinking
        recorded = any(i.request is not None for i in script.interactions)

        def failures() -> list[dict[str, Any]]:
            return [
                {"reason": f.reason, "message": f.message, "interaction": f.interaction}
                for f in route.failures
            ]

        return Endpoint(
            mode="replay" if recorded else "scripted",
            model=model,
            models_json=pi_agent_files(
                route, provider=provider, model_id=model_id, cost=SCRIPTED_PRICES
            ),
            settings=settings_json(provider, model_id),
            cassette=str(path),
            cassette_sha256=script.sha256,
            failures=failures,
            close=route.close,
        )

    def _live(self, declared_model: str | None, declared: Any) -> Endpoint:
        model = None
        if declared_model:
            model = {"model": declared_model}
            if declared.thinking:
                model["thinking"] = declared.thinking
        settings = settings_json()
        for key in ("defaultProvider", "defaultModel"):
            settings.pop(key)
        models_json = None
        if self.models is not None:
            models_json = json.loads(self.models.read_text(encoding="utf-8"))
        auth = self.auth.read_bytes() if self.auth is not None else None
        return Endpoint(
            mode="live", model=model, models_json=models_json, settings=settings, auth_json=auth
        )
