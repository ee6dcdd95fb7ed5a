"""opencode declared once: what the evaluator knows of it before `host.py` is imported."""

from __future__ import annotations

from pathlib import Path

from ..layers import SystemLayer
from ..registration import HostRegistration, ToolDialect
from ..workspace_layers import WorkspaceLayer
from .environment import OWNED_ENVIRONMENT

PINNED = "1.18.33"
PACKAGE = "opencode-linux-x64"
BINARY = f"node_modules/{PACKAGE}/bin/opencode"
MANAGED_DIR = Path("/etc/opencode")
SYSTEM_LAYERS: tuple[SystemLayer, ...] = (
    SystemLayer(MANAGED_DIR, "managed configuration (opencode.json, opencode.jsonc)"),
)
# None to check: OPENCODE_DISABLE_PROJECT_CONFIG (`environment.QUIET`) turns off every layer of
# the workspace each `opencode run` would read (opencode.json(c), `.opencode/`, AGENTS.md,
# CLAUDE.md and CONTEXT.md, nested instructions).
WORKSPACE_LAYERS: tuple[WorkspaceLayer, ...] = ()
# The evaluator's MCP server (`hosts/command_server.py`) and the name opencode gives its tool.
RUN_COMMAND = "skill-eval_run_command"

__all__ = ["OPENCODE", "OWNED_ENVIRONMENT"]

OPENCODE = HostRegistration(
    name="opencode",
    display_name="opencode",
    package=PACKAGE,
    version=PINNED,
    binary=BINARY,
    # Its bundled OpenAI-compatible provider, pointed at the route, whatever the model.
    apis=("openai-completions",),
    tools=ToolDialect(
        shown={
            "read": "read {filePath, offset, limit}",
            "write": "write {filePath, content}",
            "edit": "edit {filePath, oldString, newString}, one call per replacement",
            "skill": "skill {name} (opencode's own skill tool)",
            "run_command": f"{RUN_COMMAND} (the evaluator's MCP tool)",
        },
    ),
    system_layers=SYSTEM_LAYERS,
    workspace_layers=WORKSPACE_LAYERS,
    owned_environment=OWNED_ENVIRONMENT,
    auth_advice=(
        "name the provider's key (e.g. ANTHROPIC_API_KEY or OPENAI_API_KEY) in "
        "runtime.environment.inherit"
    ),
    # Its reasoning variants are the provider's own; the evaluator passes none.
    thinking=("off",),
    runs_on_node=False,  # a native Bun executable
    # Every prompt goes on stdin (hosts/opencode/host.py): turn one's waits for `Launch.gate`.
    defers_first_prompt=True,
    prompt_on_stdin=True,
)
