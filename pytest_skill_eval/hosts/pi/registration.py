"""Pi declared once: what the evaluator knows of it before `hosts/pi/host.py` is imported."""

from __future__ import annotations

from ...common.skill_limits import SkillLimits
from ..environment import BASELINE_KEYS, OwnedEnvironment
from ..layers import SystemLayer
from ..registration import HostRegistration, ToolDialect
from ..workspace_layers import WorkspaceLayer

MIN_VERSION = (0, 73, 1)
PINNED = "0.73.1"
PACKAGE = "@mariozechner/pi-coding-agent"
# Pi 0.73.1 reads nothing system-wide: no /etc file, no managed layer. What it reads outside its
# agent dir is HOME's (`~/.pi`, `~/.agents/skills`: an empty home) and the folders above the
# workspace (`AGENTS.md`/`CLAUDE.md`, `.agents/skills`), which `--no-context-files` and
# `--no-skills` turn off (`pi_argv`).
SYSTEM_LAYERS: tuple[SystemLayer, ...] = ()

# The small host baseline copied from the operator's environment (PRODUCT §4): enough for Node
# to start and format text, nothing that carries identity or credentials.
# Pi's isolation (`hosts.environment`): every name `base_environment` sets, and PI_*, which
# steer its agent dir, package dir, network and telemetry.
OWNED_ENVIRONMENT = OwnedEnvironment.of(BASELINE_KEYS, prefixes=("PI_",))


# None to check: one process holds every turn (`--mode rpc`), so whatever it reads from its
# workspace it reads as it starts, before the subject has written anything; `--no-context-files`
# and `--no-skills` keep AGENTS.md, CLAUDE.md and `.agents/skills` from it even then.
WORKSPACE_LAYERS: tuple[WorkspaceLayer, ...] = ()


PI = HostRegistration(
    name="pi",
    display_name="Pi",
    package=PACKAGE,
    version=PINNED,
    # Pi speaks the provider's API: the scripted route serves chat completions, a recording
    # one the provider's own format.
    apis=("openai-completions", "anthropic-messages"),
    tools=ToolDialect(
        shown={
            "read": "read",
            "write": "write",
            "edit": "edit",
            "skill": "read of the skill's SKILL.md",
            "run_command": "run_command (the evaluator's extension)",
        },
    ),
    system_layers=SYSTEM_LAYERS,
    workspace_layers=WORKSPACE_LAYERS,
    owned_environment=OWNED_ENVIRONMENT,
    auth_advice="install a Pi auth.json with the skill_eval_pi_auth ini option",
    runs_on_node=True,
    observes_context=True,  # the observer extension
    defers_first_prompt=True,  # rpc mode: the first prompt waits for `Launch.gate`
    extensions=True,
    operator_files=True,
    # Each skill is given by its path (`--skill`); Pi lists a description whole, whatever its
    # length, and warns of what breaks the specification.
    skill_limits=SkillLimits(linked_by_name=False),
)
