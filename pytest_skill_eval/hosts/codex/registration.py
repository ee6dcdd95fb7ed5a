"""Codex declared once: what the evaluator knows of it before `host.py` is imported."""

from __future__ import annotations

from pathlib import Path

from ...common.skill_limits import SkillLimits
from ..environment import BASELINE_KEYS, OwnedEnvironment
from ..layers import SystemLayer
from ..registration import HostRegistration, ToolDialect
from ..workspace_layers import WorkspaceLayer

# The variable that carries Codex's placeholder key to the loopback server (`config`).
KEY_ENV = "SKILL_EVAL_CODEX_KEY"
PINNED = "0.171.0"
PACKAGE = "@openai/codex"
SYSTEM_DIR = Path("/etc/codex")
# Layers the evaluator cannot override: Codex merges them over (or instead of) CODEX_HOME's.
SYSTEM_LAYERS: tuple[SystemLayer, ...] = (
    SystemLayer(SYSTEM_DIR / "config.toml", "system configuration"),
    SystemLayer(SYSTEM_DIR / "managed_config.toml", "managed configuration"),
    SystemLayer(SYSTEM_DIR / "requirements.toml", "managed requirements"),
    SystemLayer(SYSTEM_DIR / "skills", "system skills"),
    # Its `*.rules` files decide which commands the subject may run (0.171.0 reads them).
    SystemLayer(SYSTEM_DIR / "rules", "system command rules"),
)
# What Codex reads from its workspace (the project root: no marker is looked for above it) as
# its thread starts, and may again as a turn begins: the project instructions, the project's
# `.codex` (configuration, rules, skills) and its `.agents/skills`.
WORKSPACE_LAYERS: tuple[WorkspaceLayer, ...] = (
    WorkspaceLayer("AGENTS.md", "project instructions"),
    WorkspaceLayer("AGENTS.override.md", "project instructions"),
    WorkspaceLayer(".codex", "project configuration, rules and skills"),
    WorkspaceLayer(".agents/skills", "project skills"),
)

# Codex's isolation (`hosts.environment`): every name `environment` sets (the npm launcher's
# CODEX_MANAGED_* among them), CODEX_*, which steer its home, state, certificates and
# credentials, and OPENAI_BASE_URL, its model endpoint. A live run still inherits its key.
OWNED_ENVIRONMENT = OwnedEnvironment.of(
    (*BASELINE_KEYS, KEY_ENV, "OPENAI_BASE_URL"),
    prefixes=("CODEX_",),
    allowed=("CODEX_API_KEY",),
)
# Neutral tools Codex cannot be seen calling: a `tool-call` check on them is unavailable.
UNOBSERVABLE_TOOLS = {
    "read": "Codex has no read tool: it reads files through its shell (exec_command)",
    "write": "Codex has no write tool: it changes files through apply_patch",
    "edit": "Codex has no edit tool: it changes files through apply_patch",
}
# What 0.171.0 lists of a skill: its description cut at 1,024 characters, without a word; and
# `skills/.system`, where it writes its bundled skills, is no name a declared skill may take.
SKILL_LIMITS = SkillLimits(
    description_cut=1024,
    reserved={".system": "Codex keeps its bundled system skills under that name"},
)


CODEX = HostRegistration(
    name="codex",
    display_name="Codex",
    package=PACKAGE,
    version=PINNED,
    apis=("openai-responses",),
    tools=ToolDialect(
        shown={
            "read": "exec_command: cat (sed -n with offset/limit)",
            "write": "apply_patch: Add File",
            "edit": "apply_patch: Update File",
            "skill": "exec_command: cat of the skill's SKILL.md",
            "run_command": "run_command in the mcp__skill_eval namespace",
        },
    ),
    unobservable=UNOBSERVABLE_TOOLS,
    system_layers=SYSTEM_LAYERS,
    workspace_layers=WORKSPACE_LAYERS,
    owned_environment=OWNED_ENVIRONMENT,
    credential_variables=("OPENAI_API_KEY", "CODEX_API_KEY"),
    auth_advice="name OPENAI_API_KEY (or CODEX_API_KEY) in runtime.environment.inherit",
    converses_on_stdin=True,  # `codex app-server`: JSON-RPC on stdin for every run
    defers_first_prompt=True,  # its thread started, the first turn waits for `Launch.gate`
    runs_on_node=False,  # its native binary runs directly (`binary.native_codex`), never Node
    skill_limits=SKILL_LIMITS,
)
