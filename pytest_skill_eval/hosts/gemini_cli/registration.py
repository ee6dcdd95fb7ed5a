"""Gemini CLI declared once: what the evaluator knows of it before `host.py` is imported."""

from __future__ import annotations

from pathlib import Path

from ..environment import BASELINE_KEYS, OwnedEnvironment
from ..layers import SystemLayer
from ..registration import HostRegistration, ToolDialect
from ..workspace_layers import WorkspaceLayer

PINNED = "0.61.0"
PACKAGE = "@google/gemini-cli"
SYSTEM_DIR = Path("/etc/gemini-cli")
SYSTEM_LAYERS: tuple[SystemLayer, ...] = (
    SystemLayer(SYSTEM_DIR, "system settings, system defaults and system policies"),
)
# What each process reads from its workspace in 0.61.0 (trusted, as `--approval-mode yolo`
# needs): workspace settings win over the run's user settings key by key, and `hooks`
# (concatenated) and `mcpServers` (merged by name) add to them whatever scope says otherwise;
# the nearest `.gemini/.env` fills unset variables (GEMINI_SYSTEM_MD, GEMINI_TELEMETRY_*);
# workspace skills join the declared ones; GEMINI.md is memory. A workspace agent is never
# offered (`tools.core` names the declared tools only), its workspace policies are off in the
# binary, and extensions are read only from the isolated home.
WORKSPACE_LAYERS: tuple[WorkspaceLayer, ...] = (
    WorkspaceLayer(".gemini/settings.json", "workspace settings: hooks, MCP servers, tools"),
    WorkspaceLayer(".gemini/.env", "workspace environment file"),
    WorkspaceLayer(".gemini/skills", "workspace skills"),
    WorkspaceLayer(".agents/skills", "workspace skills"),
    WorkspaceLayer("GEMINI.md", "workspace memory"),
)

# Declared commands reach Gemini CLI through the evaluator's MCP server `skill-eval`; it names
# an MCP tool `mcp_<server>_<tool>`.
RUN_COMMAND = "mcp_skill-eval_run_command"
# Gemini CLI's isolation (`hosts.environment`): every name the launch sets, GEMINI_* (its home,
# system settings, system prompt, sandbox, model, trust) and GOOGLE_* (endpoint, credentials,
# cloud project), CLOUD_SHELL, which switches its auth, and SANDBOX, which skips its relaunch
# checks. A live run still inherits its key.
OWNED_ENVIRONMENT = OwnedEnvironment.of(
    (*BASELINE_KEYS, "CLOUD_SHELL", "SANDBOX"),
    prefixes=("GEMINI_", "GOOGLE_"),
    allowed=("GEMINI_API_KEY",),
)


GEMINI_CLI = HostRegistration(
    name="gemini-cli",
    display_name="Gemini CLI",
    binary_option="gemini",
    package=PACKAGE,
    version=PINNED,
    apis=("gemini-generate-content",),
    tools=ToolDialect(
        shown={
            "read": "read_file {file_path, start_line, end_line}",
            "write": "write_file {file_path, content}",
            "edit": "replace {file_path, old_string, new_string}, one call per replacement",
            "skill": "activate_skill {name}",
            "run_command": RUN_COMMAND,
        },
    ),
    system_layers=SYSTEM_LAYERS,
    workspace_layers=WORKSPACE_LAYERS,
    owned_environment=OWNED_ENVIRONMENT,
    credential_variables=("GEMINI_API_KEY",),
    auth_advice="name GEMINI_API_KEY in runtime.environment.inherit",
    runs_on_node=True,  # `bundle/gemini.js`, run by `node` on PATH
    # Its date line, in its locale's words.
    request_stamps=((r"Today's date is \w+, \w+ \d{1,2}, \d{4}", "Today's date is {{date}}"),),
)
