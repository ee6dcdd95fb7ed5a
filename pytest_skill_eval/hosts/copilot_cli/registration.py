"""GitHub Copilot CLI declared once: what the evaluator knows of it before `host.py` is
imported."""

from __future__ import annotations

from pathlib import Path

from ...common.skill_limits import SkillLimits
from ..layers import SystemLayer
from ..registration import HostRegistration, ToolDialect
from ..workspace_layers import WorkspaceLayer
from .environment import OWNED_ENVIRONMENT

PINNED = "1.0.102"
PACKAGE = "@github/copilot"
# The native build its npm launcher would start, from the platform package it depends on.
PLATFORM_PACKAGE = "@github/copilot-linux-x64"
BINARY = f"node_modules/{PLATFORM_PACKAGE}/copilot"
# Besides `COPILOT_HOME` and HOME, 1.0.102 reads one file outside its isolated home as it
# starts (seen by tracing its opens): the device's managed settings, which an administrator uses
# to choose its model, permissions and plugins, and which nothing on its command line overrides.
SYSTEM_LAYERS: tuple[SystemLayer, ...] = (
    SystemLayer(Path("/etc/github-copilot/managed-settings.json"), "device managed settings"),
)
# What 1.0.102 reads from the workspace as each process starts. Custom instructions
# (`--no-custom-instructions`), hooks (`disableAllHooks`) and the workspace's skill directories
# (`ignoredSkillsLocations`) are switched off; these are checked before each later turn's
# process so that a subject never plants configuration its next process would load.
WORKSPACE_LAYERS: tuple[WorkspaceLayer, ...] = (
    WorkspaceLayer(".github/copilot-instructions.md", "repository instructions"),
    WorkspaceLayer(".github/instructions", "path-specific instructions"),
    WorkspaceLayer("AGENTS.md", "agent instructions"),
    WorkspaceLayer("CLAUDE.md", "agent instructions"),
    WorkspaceLayer("GEMINI.md", "agent instructions"),
    WorkspaceLayer(".github/skills", "project skills"),
    WorkspaceLayer(".claude/skills", "project skills"),
    WorkspaceLayer(".agents/skills", "project skills"),
    WorkspaceLayer(".claude/commands", "Claude Code commands, listed as skills"),
    WorkspaceLayer(".github/agents", "custom agents"),
    WorkspaceLayer(".github/hooks", "repository hooks"),
    WorkspaceLayer(".github/copilot", "repository settings: hooks, MCP servers"),
    WorkspaceLayer(".copilot", "repository settings and MCP servers"),
    WorkspaceLayer(".mcp.json", "workspace MCP servers"),
    WorkspaceLayer(".vscode/mcp.json", "workspace MCP servers"),
)
# The evaluator's MCP server (`hosts/command_server.py`) and the name Copilot CLI gives its tool.
RUN_COMMAND = "skill-eval-run_command"
# The skills bundled with 1.0.102 (`builtin/` in its package): never offered, and no declared
# skill may take their names (it would be disabled with them).
BUILTIN_SKILLS = ("customize-cloud-agent", "discover-resources", "github-pr-media")
# What 1.0.102 does with a skill: a description over 1,024 characters drops the whole skill (it
# is never listed, where Codex cuts it), as does a SKILL.md without front matter.
SKILL_LIMITS = SkillLimits(
    description_drop=1024,
    reserved=dict.fromkeys(
        BUILTIN_SKILLS, "Copilot CLI's bundled skill of that name is disabled by name"
    ),
)

__all__ = ["COPILOT_CLI", "OWNED_ENVIRONMENT"]

COPILOT_CLI = HostRegistration(
    name="copilot-cli",
    display_name="Copilot CLI",
    package=PACKAGE,
    version=PINNED,
    binary=BINARY,
    command="copilot",
    # Its bring-your-own-key provider (`COPILOT_PROVIDER_BASE_URL`), OpenAI chat completions.
    apis=("openai-completions",),
    tools=ToolDialect(
        shown={
            "read": "view {path, view_range} (an absolute path)",
            "write": "create {path, file_text} (an absolute path)",
            "edit": "edit {path, old_str, new_str}, one call per replacement",
            "skill": "skill {skill} (Copilot CLI's own skill tool)",
            "run_command": f"{RUN_COMMAND} (the evaluator's MCP tool)",
        },
    ),
    system_layers=SYSTEM_LAYERS,
    workspace_layers=WORKSPACE_LAYERS,
    owned_environment=OWNED_ENVIRONMENT,
    credential_variables=("COPILOT_PROVIDER_API_KEY",),
    auth_advice="name COPILOT_PROVIDER_API_KEY in runtime.environment.inherit",
    # Its reasoning effort is the provider's; the evaluator passes none.
    thinking=("off",),
    runs_on_node=False,  # a native executable
    skill_limits=SKILL_LIMITS,
    # The time stamp on each user message.
    request_stamps=(
        (
            r"<current_datetime>[^<]*</current_datetime>",
            "<current_datetime>{{datetime}}</current_datetime>",
        ),
    ),
)
