"""Claude Code declared once: what the evaluator knows of it before `host.py` is imported."""

from __future__ import annotations

from pathlib import Path

from ...common.skill_limits import SkillLimits
from ..environment import BASELINE_KEYS, OwnedEnvironment
from ..layers import SystemLayer
from ..registration import HostRegistration, ToolDialect
from ..workspace_layers import WorkspaceLayer

PINNED = "2.1.332"
PACKAGE = "@anthropic-ai/claude-code"
# The managed directory 2.1.332 reads on Linux (its binary names no variable that moves it), and
# what it reads there; on WSL it may also inherit the Windows one when a managed source says so.
MANAGED_DIR = Path("/etc/claude-code")
WINDOWS_MANAGED_DIR = Path("/mnt/c/Program Files/ClaudeCode")
SYSTEM_LAYERS: tuple[SystemLayer, ...] = (
    SystemLayer(MANAGED_DIR / "managed-settings.json", "managed settings"),
    SystemLayer(MANAGED_DIR / "managed-settings.d", "managed settings drop-ins"),
    SystemLayer(MANAGED_DIR / "managed-mcp.json", "managed MCP servers"),
    SystemLayer(MANAGED_DIR / "CLAUDE.md", "managed memory"),
    SystemLayer(MANAGED_DIR / ".claude", "managed skills, agents, commands and rules"),
    SystemLayer(WINDOWS_MANAGED_DIR, "Windows managed settings a WSL session may inherit"),
)
# None to check: one process holds every turn (a multi-turn group reads stream-json prompts), and
# it reads none of its workspace's layers even then: `--setting-sources user` leaves out
# `.claude/` (settings, skills, agents, commands), `--strict-mcp-config` `.mcp.json`, and
# CLAUDE_CODE_DISABLE_CLAUDE_MDS every CLAUDE.md.
WORKSPACE_LAYERS: tuple[WorkspaceLayer, ...] = ()

# Declared commands reach Claude Code through the evaluator's MCP server `skill-eval`.
RUN_COMMAND = "mcp__skill-eval__run_command"
QUIET = {
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "CLAUDE_CODE_DISABLE_BUNDLED_SKILLS": "1",
    "CLAUDE_CODE_DISABLE_CLAUDE_MDS": "1",
    "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1",
    "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY": "1",
}
# Claude Code's isolation (`hosts.environment`): every name `environment` sets, and the families
# that steer its config dir, model endpoint, telemetry and updates (CLAUDE_*, ANTHROPIC_*,
# DISABLE_*) or load code into it (BUN_*: it is a Bun executable); its thinking is the declared
# `model.thinking`. A live run still inherits its provider key.
OWNED_ENVIRONMENT = OwnedEnvironment.of(
    (*BASELINE_KEYS, *QUIET, "CLAUDECODE", "MAX_THINKING_TOKENS"),
    prefixes=("CLAUDE_", "ANTHROPIC_", "DISABLE_", "BUN_"),
    allowed=("ANTHROPIC_API_KEY",),
)
# What 2.1.332 lists of a skill: `- name: description - when_to_use`, one entry cut at 1,536
# characters (`skillListingMaxDescChars`); past 30,000 characters of entries (measured, run as
# the evaluator runs it: 29 entries of 1,000 characters whole, 30 shortened) it shortens
# descriptions to fit.
SKILL_LIMITS = SkillLimits(
    description_cut=1536,
    listing_fields=("when_to_use",),
    catalog_cut=30000,
    catalog_basis="measured on Claude Code 2.1.332 as the evaluator runs it",
    lists_without_front_matter=True,  # its first heading as the description
)
# `off` disables thinking; every other level is its `--effort`.
THINKING = ("off", "low", "medium", "high", "xhigh", "max")


CLAUDE_CODE = HostRegistration(
    name="claude-code",
    display_name="Claude Code",
    binary_option="claude",
    package=PACKAGE,
    version=PINNED,
    apis=("anthropic-messages",),
    tools=ToolDialect(
        shown={
            "read": "Read {file_path, offset, limit}",
            "write": "Write {file_path, content}",
            "edit": "Edit {file_path, old_string, new_string}, one call per replacement",
            "skill": "Skill {skill}",
            "run_command": RUN_COMMAND,
        },
    ),
    system_layers=SYSTEM_LAYERS,
    workspace_layers=WORKSPACE_LAYERS,
    owned_environment=OWNED_ENVIRONMENT,
    credential_variables=("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"),
    auth_advice="name ANTHROPIC_API_KEY in runtime.environment.inherit",
    thinking=THINKING,
    runs_on_node=False,  # a native binary
    # A multi-turn run's prompts go to stdin as stream-json lines, which it reads only once it
    # has started (about 0.5 s of CPU), however long it waits: its candidate can be pre-started.
    defers_first_prompt=True,
    skill_limits=SKILL_LIMITS,
    # Its date reminder, and the ids in `metadata.user_id` (a fresh config dir is a fresh device).
    request_stamps=(
        (r"Today's date is \d{4}-\d{2}-\d{2}", "Today's date is {{date}}"),
        (r'"device_id":"[^"]*"', '"device_id":"{{device_id}}"'),
        (r'"session_id":"[^"]*"', '"session_id":"{{session_id}}"'),
    ),
)
