"""Which credential a live subject needs, how to declare it, and refusing a live run that
declares none before any subject starts (nothing would reach the provider but a refusal)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..definitions import Group, LoadedDefinition, selected_groups
from ..errors import ModelProviderError
from .registry import registration_for

# The variables each provider's key is read from (the first is the one to declare).
PROVIDER_KEYS = {
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN"),
    "openai": ("OPENAI_API_KEY",),
    "google": ("GEMINI_API_KEY",),
    "mistral": ("MISTRAL_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
}
# An inherited variable named like a secret is taken for a credential under a name of its own.
SECRET_SUFFIXES = ("_API_KEY", "_KEY", "_TOKEN")


class MissingCredentialsError(ModelProviderError):
    """A live run (no --skill-eval-cassettes) whose subjects declare no credential."""


def provider_of(model: str | None) -> str | None:
    """The provider of a declared `provider/model`, or None (the host's default)."""
    provider, sep, _ = (model or "").partition("/")
    return provider if sep and provider else None


def key_variables(host: str, provider: str | None) -> tuple[str, ...]:
    """The variables a subject on `host` reads the key of `provider` from, most usual first: its
    own when it speaks to one provider whatever the model, else the provider's."""
    own = registration_for(host).credential_variables
    if own:
        return own
    if provider is None:
        return ()
    return PROVIDER_KEYS.get(provider, (f"{provider.upper().replace('-', '_')}_API_KEY",))


def how_to_declare(host: str, provider: str | None) -> str:
    """How to give a live subject on `host` the key of `provider`, in the definition's words."""
    names = key_variables(host, provider)
    variable = names[0] if names else "the provider's key variable"
    advice = f"name {variable} in runtime.environment.inherit"
    registration = registration_for(host)
    return f"{advice} (or {registration.auth_advice})" if registration.operator_files else advice


def declares_credential(
    group: Group, providers_with_key: Iterable[str], pi_auth: Path | None
) -> bool:
    """Whether a live subject of `group` (on its effective host) is given any credential."""
    runtime = group.effective_runtime
    inherited = set(runtime.environment.inherit)
    provider = provider_of(group.model.model if group.model else None)
    if inherited & set(key_variables(runtime.host, provider)):
        return True
    if any(name.endswith(SECRET_SUFFIXES) for name in inherited):
        return True
    if not registration_for(runtime.host).operator_files:
        return False
    return pi_auth is not None or (provider is not None and provider in set(providers_with_key))


def providers_with_key(models_table: Mapping[str, Any]) -> list[str]:
    """The providers a `skill_eval_pi_models` file gives an `apiKey`."""
    return [
        name
        for name, entry in models_table.items()
        if isinstance(entry, Mapping) and entry.get("apiKey")
    ]


def refuse_live_without_credentials(
    groups: Sequence[Group], models_table: Mapping[str, Any], pi_auth: Path | None
) -> None:
    """One line refusing a live run, before any subject starts, when a group declares no
    credential for its host: it names `--skill-eval-cassettes` and how to declare one."""
    keyed = providers_with_key(models_table)
    missing: list[str] = []
    for group in groups:
        if declares_credential(group, keyed, pi_auth):
            continue
        host = group.effective_runtime.host
        model = group.model.model if group.model else "the host's default model"
        missing.append(
            f"group {group.id!r} ({model} on {host}): "
            f"{how_to_declare(host, provider_of(group.model.model if group.model else None))}"
        )
    if missing:
        raise MissingCredentialsError(
            "a live run (no --skill-eval-cassettes) would start subjects with no credential "
            "declared, so every model call would be refused: run offline against scripts with "
            "--skill-eval-cassettes DIR, or declare a credential for each: " + "; ".join(missing)
        )


def live_subjects(
    definitions: Iterable[LoadedDefinition], selectors: Sequence[str], hosts: Sequence[str]
) -> list[Group]:
    """The selected groups, each on every host it will run on (the chosen ones, else its own)."""
    found: dict[tuple[str, str], Group] = {}
    for loaded in selected_groups(definitions, selectors):
        group = loaded.group
        for host in hosts or (group.effective_runtime.host,):
            if group.cannot_run(host) is None:
                found.setdefault((group.id, host), group.on_host(host))
    return list(found.values())
