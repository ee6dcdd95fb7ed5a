"""Choosing each subject's model endpoint: the loopback scripted server, or the live provider."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..budget.prices import PriceTable
from ..definitions import LoadedDefinition, LoadedGroup, ModelChoice
from ..errors import ModelProviderError
from ..evidence.observed import EndpointFailure, ModelRequest
from ..hosts.base import Endpoint, Executable, ServedModel
from ..hosts.credentials import live_subjects, refuse_live_without_credentials
from ..hosts.dialect import renderer
from ..hosts.pi.config import ModelSpecError, split_model
from ..hosts.registry import registration_for
from ..modelserver.gemini import GEMINI, stream_url
from ..modelserver.route import Route
from ..modelserver.script import ScriptError
from ..modelserver.scriptparse import load_script
from ..modelserver.scriptpaths import cassette_file, script_path
from ..modelserver.server import ScriptedModelServer
from ..modelserver.wire import OPENAI

RECORD_MODES = ("none", "once", "all")
# Scripted runs are priced like a typical frontier model (USD per million tokens) so usage and
# cost show up in evidence exactly as they would live; scripted spend is never charged.
SCRIPTED_PRICES = {"input": 3.0, "output": 15.0, "cacheRead": 0.3, "cacheWrite": 3.75}


# provider → (api kind, base URL, key variable) for recording without a models.json entry.
KNOWN_PROVIDERS = {
    "anthropic": ("anthropic-messages", "https://api.anthropic.com", "ANTHROPIC_API_KEY"),
    "openai": ("openai-completions", "https://api.openai.com/v1", "OPENAI_API_KEY"),
    "google": (GEMINI, "https://generativelanguage.googleapis.com", "GEMINI_API_KEY"),
}


class EndpointError(ModelProviderError):
    """The subject cannot be given a model endpoint (missing or unusable cassette)."""


class UnpricedModelError(ModelProviderError):
    """A ceiling is set but a subject that spends real money has no known price."""


@dataclass(frozen=True)
class Upstream:
    """A real provider to record from; `key` is never written anywhere."""

    api: str
    base_url: str
    key: str = field(repr=False)


class EndpointFactory:
    """One per process: starts the loopback server on first use and opens a route per subject."""

    def __init__(
        self,
        *,
        cassettes: Path | None,
        record: str,
        auth: Path | None,
        models: Path | None,
        upstream_url: str | None = None,
        binaries: Callable[[str], Executable] | None = None,
    ) -> None:
        self.cassettes = cassettes
        self.record = record
        self.upstream_url = upstream_url
        self.auth = auth
        self.models = models
        # `binaries`: host name → its checked binary, for a price source that reads one.
        self.prices = PriceTable(models, binaries)
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

    @property
    def paid_mode(self) -> str | None:
        """ "live" or "record" when subjects talk to a real provider (and spend), else None."""
        if self.cassettes is None:
            return "live"
        return "record" if self.record != "none" else None

    def _models_table(self) -> dict[str, object]:
        return self.prices.providers()

    def price(self, provider: str, model_id: str, host: str) -> Mapping[str, float] | None:
        """USD per million tokens for `provider/model_id` on `host`, else None (`PriceTable`)."""
        return self.prices.price(provider, model_id, host)

    def check_priced(self, groups: Iterable[LoadedGroup], max_cost: float) -> None:
        """Refuse, before any subject starts, a ceiling that could not see what a subject costs."""
        mode = self.paid_mode
        if mode is None:
            return  # scripted and replayed subjects spend nothing
        problems: dict[str, list[str]] = {}
        for loaded in groups:
            declared = loaded.group.model
            if declared is None:
                if mode == "live":
                    problems.setdefault("(no model declared)", []).append(loaded.group.id)
                continue  # recording without a model fails that subject before any request
            try:
                provider, model_id = split_model(declared.model)
            except ModelSpecError:
                continue  # reported by the subject's endpoint, before any request
            if self.price(provider, model_id, loaded.group.effective_runtime.host) is None:
                problems.setdefault(f"{provider}/{model_id}", []).append(loaded.group.id)
        if not problems:
            return
        lines = [
            f"--skill-eval-max-cost {max_cost:g} cannot be enforced: these {mode} subjects "
            "would spend real money at an unknown price:"
        ]
        for model, ids in problems.items():
            lines.append(f"  {model} (group {', '.join(repr(i) for i in sorted(set(ids)))})")
        lines.append(
            "Declare each group's model (model.model, provider/model). A model Pi's registry "
            "does not list needs its price: in the models.json named by the skill_eval_pi_models "
            'ini key, give that model "cost": {"input": 3, "output": 15, "cacheRead": 0.3, '
            '"cacheWrite": 3.75} (USD per million tokens).'
        )
        raise UnpricedModelError("\n".join(lines))

    def check_credentials(
        self,
        definitions: Sequence[LoadedDefinition],
        selectors: Sequence[str],
        hosts: Sequence[str],
    ) -> None:
        """Refuse a live run whose selected subjects declare no credential, before any starts."""
        if self.paid_mode == "live":
            subjects = live_subjects(definitions, selectors, hosts)
            refuse_live_without_credentials(subjects, self._models_table(), self.auth)

    def endpoint(
        self,
        loaded: LoadedGroup,
        variant: str,
        trial: int,
        placeholders: Mapping[str, str],
        workspace: Path,
    ) -> Endpoint:
        """The endpoint for one subject run whose workspace is `workspace`."""
        declared = loaded.group.model
        if self.cassettes is None:
            return self._live(declared)
        if self.record != "none":
            return self._recording(loaded, variant, trial, placeholders, workspace)
        group_id, host = loaded.group.id, loaded.group.effective_runtime.host
        path = script_path(self.cassettes, group_id, variant, trial, host)
        if path is None:
            expected = cassette_file(self.cassettes, group_id, variant)
            raise EndpointError(
                f"no cassette for group {group_id!r} variant {variant} trial {trial}: "
                f"expected {expected}"
            )
        try:
            script = load_script(path)
            provider, model_id = split_model(declared.model if declared else None)
        except (ScriptError, ModelSpecError) as error:
            raise EndpointError(str(error)) from None
        route = self._running().open_route(
            script,
            source=path,
            placeholders=placeholders,
            workspace=workspace,
            render=renderer(host),
            stamps=registration_for(host).request_stamps,
        )
        recorded = any(i.request is not None for i in script.interactions)
        return Endpoint(
            mode="replay" if recorded else "scripted",
            model=_model_argument(f"{provider}/{model_id}", declared),
            served=ServedModel(route, OPENAI, provider, model_id, SCRIPTED_PRICES),
            cassette=str(path),
            cassette_sha256=script.sha256,
            failures=lambda: _failures(route),
            requests=lambda: _requests(route),
            received=lambda: len(route.requests),
            close=route.close,
        )

    def _recording(
        self,
        loaded: LoadedGroup,
        variant: str,
        trial: int,
        placeholders: Mapping[str, str],
        workspace: Path,
    ) -> Endpoint:
        """Forward to the real provider through the loopback server, writing the cassette."""
        # Recording's modules (an HTTP client among them) load only when a run records.
        from ..modelserver.cassette import load_existing
        from ..modelserver.record import RecordingRoute
        from ..modelserver.upstream import RecordError, auth_headers, check_recordable

        declared = loaded.group.model
        assert self.cassettes is not None
        if declared is None:
            raise EndpointError(
                f"group {loaded.group.id!r} declares no model: recording needs model.model "
                "(provider/model) to know which provider to call"
            )
        try:
            provider, model_id = split_model(declared.model)
        except ModelSpecError as error:
            raise EndpointError(str(error)) from None
        host = loaded.group.effective_runtime.host
        upstream = self._upstream(provider, model_id, host)
        price = self.price(provider, model_id, host)
        path = cassette_file(self.cassettes, loaded.group.id, variant, trial, host)
        try:
            check_recordable(upstream.api)
            existing = load_existing(path) if self.record == "once" else None
        except (RecordError, ScriptError) as error:
            raise EndpointError(str(error)) from None
        route = RecordingRoute.open(
            self._running(),
            api=upstream.api,
            upstream_base_url=upstream.base_url,
            cassette_path=path,
            existing=existing,
            mode=self.record,
            placeholders=placeholders,
            workspace=workspace,
            upstream_headers=auth_headers(upstream.api, upstream.key),
            prices=price,
            render=renderer(host),
            stamps=registration_for(host).request_stamps,
        )
        endpoint = Endpoint(
            mode="record",
            model=_model_argument(f"{provider}/{model_id}", declared),
            # Pi prices the whole conversation; what is charged is what went upstream.
            served=ServedModel(route, upstream.api, provider, model_id, price),
            cassette=str(path),
            requests=lambda: _requests(route),
            received=lambda: len(route.requests),
            spend=lambda: route.spent,
            close=route.close,
            secrets={"UPSTREAM_API_KEY": upstream.key},
            redact_with=route.use_redactor,
        )

        def failures() -> list[EndpointFailure]:
            # Save before the run is recorded, so a cassette that cannot be written is evidence.
            route.save()
            endpoint.cassette_sha256 = route.cassette_sha256
            return _failures(route)

        endpoint.failures = failures
        return endpoint

    def _upstream(self, provider: str, model_id: str, host: str) -> Upstream:
        """Where a provider really lives: the ini models.json, else the known public APIs; the
        wire format is the host's own where it speaks only one."""
        found = self._models_table().get(provider)
        entry: Mapping[str, object] = found if isinstance(found, dict) else {}
        known = KNOWN_PROVIDERS.get(provider)
        fixed = registration_for(host).fixed_api
        api = fixed or _text(entry.get("api")) or (known[0] if known else None)
        base_url = self.upstream_url or _text(entry.get("baseUrl")) or (known[1] if known else None)
        key_name = _text(entry.get("apiKey")) or (known[2] if known else None)
        if not api or not base_url or not key_name:
            raise EndpointError(
                f"cannot record provider {provider!r}: name it in the models.json given by "
                "skill_eval_pi_models (baseUrl, api, apiKey), or use a known provider "
                f"({', '.join(KNOWN_PROVIDERS)})"
            )
        # Like Pi: an apiKey that names an environment variable is read from it.
        key = os.environ.get(key_name, key_name if entry.get("apiKey") else "")
        if not key:
            raise EndpointError(
                f"recording {provider!r} needs its API key in the environment variable {key_name}"
            )
        if api == GEMINI:
            base_url = stream_url(base_url, model_id)  # the model is part of the path
        return Upstream(api, base_url, key)

    def _live(self, declared: ModelChoice | None) -> Endpoint:
        model = _model_argument(declared.model, declared) if declared is not None else None
        models = None
        if self.models is not None:
            models = json.loads(self.models.read_text(encoding="utf-8"))
        auth = self.auth.read_bytes() if self.auth is not None else None
        return Endpoint(mode="live", model=model, live_models=models, auth_json=auth)


def _model_argument(model: str, declared: ModelChoice | None) -> dict[str, str]:
    """What Pi's --model and --thinking get: `provider/model`, and the declared thinking."""
    argument = {"model": model}
    if declared is not None and declared.thinking:
        argument["thinking"] = declared.thinking
    return argument


def _text(value: object) -> str | None:
    """A models.json field that names something: a string, else nothing."""
    return value if isinstance(value, str) else None


def _failures(route: Route) -> list[EndpointFailure]:
    return [
        {"reason": f.reason, "message": f.message, "interaction": f.interaction}
        for f in route.failures
    ]


def _requests(route: Route) -> list[ModelRequest]:
    return [
        {"index": r.index, "api": r.api, "path": r.path, "sha256": r.sha256, "body": r.body}
        for r in list(route.requests)
    ]
