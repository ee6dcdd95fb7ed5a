"""The hardened `config.toml` of one Codex run, and what it enforces.

Codex's defaults reach four outside hosts (update checks, analytics, OTLP, plugins) and install
bundled skills; every key that does so is turned off here, the loopback route is the only model
provider, and `--strict-config` makes an unknown key an error, so a key the pinned version does
not know cannot be silently ignored.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypedDict

from .registration import KEY_ENV

PROVIDER = "skill_eval"
SERVER_NAME = "skill-eval"  # `command_server.SERVER_NAME`: Codex names its tool after it
# The placeholder key Codex needs to start (in KEY_ENV); the loopback server ignores it.
LOOPBACK_KEY = "skill-eval-loopback"
# A slug Codex knows: it offers its full tool set (apply_patch included) without a warning.
DEFAULT_MODEL = "gpt-5.5"
# Neutral thinking levels → Codex's `model_reasoning_effort`.
EFFORT = {
    "off": "none",
    "minimal": "minimal",
    "low": "low",
    "medium": "medium",
    "high": "high",
    "xhigh": "xhigh",
}
FEATURES_OFF = (
    "plugins",
    "apps",
    "remote_plugin",
    "plugin_sharing",
    "hooks",
    "image_generation",
    "goals",
    "tool_suggest",
    "in_app_updates",
    "skill_mcp_dependency_install",
)
WRITE_TOOLS = ("write", "edit")
STARTUP_TIMEOUT_S = 60


class McpTable(TypedDict):
    """`[mcp_servers.skill-eval]` of config.toml."""

    command: str
    args: list[str]
    cwd: str
    env_vars: list[str]
    startup_timeout_sec: int
    tool_timeout_sec: float
    required: bool
    default_tools_approval_mode: str


def command_server_table(
    python: str, script: str, workspace: str, forwarded: Sequence[str], timeout_s: float
) -> McpTable:
    """`[mcp_servers.skill-eval]`: the server started as `python -I script` in the workspace.

    Codex gives an MCP server only a few variables of its own; `env_vars` names the others it
    passes on (the group's environment and the server's configuration), so no value is written
    to the file. A call may last as long as the longest declared command, plus the kill grace.
    """
    return {
        "command": python,
        "args": ["-I", script],
        "cwd": workspace,
        "env_vars": sorted(set(forwarded)),
        "startup_timeout_sec": STARTUP_TIMEOUT_S,
        "tool_timeout_sec": timeout_s,
        "required": True,
        # The evaluator offers only declared commands: each call runs without asking.
        "default_tools_approval_mode": "approve",
    }


def sandbox_mode(tools: Sequence[str]) -> str:
    """`read-only` unless the group declares a tool that changes files."""
    return "workspace-write" if any(t in WRITE_TOOLS for t in tools) else "read-only"


@dataclass(frozen=True)
class CodexConfig:
    """What one run's `config.toml` says, before it is written."""

    base_url: str | None
    model: str = DEFAULT_MODEL
    effort: str | None = None
    sandbox: str = "read-only"
    instructions_file: str | None = None
    # `runtime.prompt: host`: the declared context, added to Codex's own instructions.
    developer_instructions: str | None = None
    # Declared commands: the evaluator's MCP server (`hosts/command_server.py`), its table.
    command_server: McpTable | None = None

    def values(self) -> dict[str, object]:
        """The top-level keys (JSON scalars and arrays), then the tables under their `[name]`."""
        top: dict[str, object] = {
            "model": self.model,
            "check_for_update_on_startup": False,
            "web_search": "disabled",
            "sandbox_mode": self.sandbox,
            "approval_policy": "never",
            # The workspace is the project root: no AGENTS.md or skills from the folders above.
            "project_root_markers": [],
        }
        if self.base_url is not None:
            top["model_provider"] = PROVIDER
        if self.effort is not None:
            top["model_reasoning_effort"] = self.effort
        if self.instructions_file is not None:
            top["model_instructions_file"] = self.instructions_file
        if self.developer_instructions is not None:
            top["developer_instructions"] = self.developer_instructions
        tables: dict[str, Mapping[str, object]] = {
            "analytics": {"enabled": False},
            "otel": {"exporter": "none"},
            "features": dict.fromkeys(FEATURES_OFF, False),
            "skills.bundled": {"enabled": False},
            "agents": {"enabled": False},
            "history": {"persistence": "none"},
            "sandbox_workspace_write": {"network_access": False},
        }
        if self.command_server is not None:
            tables[f"mcp_servers.{SERVER_NAME}"] = self.command_server.copy()
        if self.base_url is not None:
            tables[f"model_providers.{PROVIDER}"] = {
                "name": "pytest-skill-eval loopback",
                "base_url": self.base_url,
                "wire_api": "responses",
                "env_key": KEY_ENV,
                # A retry would consume the script's next answer: a failure stays a failure.
                "request_max_retries": 0,
                "stream_max_retries": 0,
            }
        return {**top, **{f"[{name}]": table for name, table in tables.items()}}

    def toml(self) -> str:
        """The file's text: JSON scalars and arrays are valid TOML values."""
        lines: list[str] = []
        for key, value in self.values().items():
            if isinstance(value, Mapping):
                lines += ["", key]
                lines += [f"{k} = {json.dumps(v, ensure_ascii=False)}" for k, v in value.items()]
            else:
                lines.append(f"{key} = {json.dumps(value, ensure_ascii=False)}")
        return "\n".join(lines) + "\n"

    def enforced(self, confined: bool) -> dict[str, str | bool]:
        """What the run record says this run enforced (and what it did not)."""
        return {
            "sandbox": self.sandbox,
            "approvals": "never",
            "writes": "workspace" if self.sandbox == "workspace-write" else "none",
            # Unconfined only with --skill-eval-codex-unconfined-reads, where bwrap cannot run.
            "reads": "workspace, resources, skills and system dirs (mount namespace)"
            if confined
            else "unconfined",
            "network": "loopback model provider only; sandboxed commands have no network",
            "modelProvider": PROVIDER if self.base_url is not None else "codex default",
            "strictConfig": True,
        }
