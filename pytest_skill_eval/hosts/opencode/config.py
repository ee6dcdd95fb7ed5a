"""The opencode.json the evaluator writes for one run, in the isolated config directory.

One provider, `skill-eval`, through opencode's bundled OpenAI-compatible SDK pointed at the
loopback route (chat completions); its one model priced as the served model, so opencode's own
cost is the simulated one. Permissions do the isolation opencode's flags cannot: `bash` and
`webfetch` denied (declared commands arrive as the evaluator's MCP tool instead), every path
outside the workspace and the declared roots denied (`external_directory`, the path guard), and
only the declared skills allowed, which also hides opencode's built-in skill from the model.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NotRequired, TypedDict

from .registration import RUN_COMMAND

PROVIDER = "skill-eval"
DEFAULT_MODEL = "scripted"
# The placeholder key opencode's provider needs; the loopback server ignores it.
LOOPBACK_KEY = "skill-eval-loopback"
SDK = "@ai-sdk/openai-compatible"
# The evaluator's MCP server (`hosts/command_server.py`); the name opencode gives its tool is
# RUN_COMMAND, declared with the registration.
COMMAND_SERVER = "skill-eval"
# The neutral tools a group declares → opencode's permission for them.
PERMISSIONS = {"read": "read", "write": "edit", "edit": "edit"}
_PRICE_KEYS = {"input": "input", "output": "output", "cacheRead": "cache_read"}
_PRICE_KEYS |= {"cacheWrite": "cache_write"}


class McpEntry(TypedDict):
    """An `mcp` entry of opencode.json: a local server, its command, environment and timeout."""

    type: str
    command: list[str]
    environment: dict[str, str]
    enabled: bool
    timeout: int


class ModelEntry(TypedDict):
    """The provider's one model: its name, tool calls on, its prices and declared options."""

    name: str
    tool_call: bool
    cost: NotRequired[dict[str, float]]
    options: NotRequired[dict[str, object]]


class ProviderEntry(TypedDict):
    """The loopback provider: the SDK it goes through, its options and its model."""

    npm: str
    name: str
    options: dict[str, str]
    models: dict[str, ModelEntry]


# A permission: allow or deny, or a pattern → allow/deny table (paths, skills).
Permission = str | dict[str, str]


class Document(TypedDict):
    """The whole opencode.json."""

    autoupdate: bool
    share: str
    snapshot: bool
    model: str
    small_model: str
    enabled_providers: list[str]
    provider: dict[str, ProviderEntry]
    permission: dict[str, Permission]
    instructions: list[str]
    lsp: bool
    formatter: bool
    mcp: dict[str, McpEntry]
    agent: NotRequired[dict[str, dict[str, str]]]


@dataclass(frozen=True)
class OpencodeConfig:
    """What one run's opencode.json says."""

    base_url: str | None
    model: str
    tools: tuple[str, ...]
    skills: tuple[str, ...]
    allowed_roots: tuple[str, ...]
    prices: Mapping[str, float] | None = None
    instructions: tuple[str, ...] = ()
    prompt: str | None = None  # replaces opencode's own system prompt (isolated mode)
    command_server: McpEntry | None = None
    variant: Mapping[str, object] = field(default_factory=dict)

    def permission(self) -> dict[str, Permission]:
        """Undeclared tools, shells, the web, outside paths and other skills: all denied."""
        allowed = {PERMISSIONS[t] for t in self.tools if t in PERMISSIONS}
        value: dict[str, Permission] = {
            "*": "deny",
            "bash": "deny",
            "webfetch": "deny",
            "websearch": "deny",
            "task": "deny",
            "todowrite": "deny",
            "question": "deny",
            "external_directory": {"*": "deny"}
            | {f"{root.rstrip('/')}/*": "allow" for root in self.allowed_roots},
            "skill": {"*": "deny"} | dict.fromkeys(self.skills, "allow"),
        }
        for permission in ("read", "edit", "glob", "grep", "list"):
            value[permission] = "allow" if permission in allowed else "deny"
        if "read" in allowed:
            value |= {"glob": "allow", "grep": "allow", "list": "allow"}
        if self.command_server is not None:
            value[RUN_COMMAND] = "allow"
        return value

    def document(self) -> Document:
        """The whole opencode.json."""
        model: ModelEntry = {"name": self.model, "tool_call": True}
        if self.prices:
            model["cost"] = {
                key: self.prices.get(neutral, 0.0) for neutral, key in _PRICE_KEYS.items()
            }
        if self.variant:
            model["options"] = dict(self.variant)
        options = {"apiKey": LOOPBACK_KEY} | ({"baseURL": self.base_url} if self.base_url else {})
        document: Document = {
            "autoupdate": False,
            "share": "disabled",
            "snapshot": False,
            "model": f"{PROVIDER}/{self.model}",
            "small_model": f"{PROVIDER}/{self.model}",
            "enabled_providers": [PROVIDER],
            "provider": {
                PROVIDER: {
                    "npm": SDK,
                    "name": "pytest-skill-eval",
                    "options": options,
                    "models": {self.model: model},
                }
            },
            "permission": self.permission(),
            "instructions": list(self.instructions),
            "lsp": False,
            "formatter": False,
            "mcp": {},
        }
        if self.prompt is not None:
            document["agent"] = {"build": {"prompt": self.prompt}}
        if self.command_server is not None:
            document["mcp"] = {COMMAND_SERVER: self.command_server.copy()}
        return document

    def json(self) -> str:
        """opencode.json's text."""
        return json.dumps(self.document(), indent=2, sort_keys=True) + "\n"


def command_server_entry(
    python: str, script: str, environment: Mapping[str, str], timeout_ms: int
) -> McpEntry:
    """The `mcp` entry that starts the evaluator's declared-commands server for opencode."""
    return {
        "type": "local",
        "command": [python, "-I", script],
        "environment": dict(environment),
        "enabled": True,
        "timeout": timeout_ms,
    }


def live_provider_model(model: Mapping[str, str] | None) -> str:
    """The model id the run's provider is asked for: the declared one, else the default."""
    if model is None:
        return DEFAULT_MODEL
    return model["model"].rpartition("/")[2] or DEFAULT_MODEL


def names(values: Sequence[str]) -> tuple[str, ...]:
    """Distinct names in order."""
    return tuple(dict.fromkeys(values))
