"""The shipped example suite on every registered host in one nested run, shared by the tests.

The example's groups plus a third (`activation-again`, natural-activation under another id, for
the summary's size), every host on each, one trial (the aggregate across trials and hosts is
`tests/hosts/test_offered_trials_e2e.py`'s): the most expensive run of the suite, built once per
test run. A project above the
workspaces plants a skill in every folder where a host looks for a project's skills, a Claude
Code command and every host's instructions file: none may reach a subject.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from pytest_skill_eval.hosts.registry import names
from tests.support.files import write
from tests.support.git import run_git
from tests.support.operator import invisible_skill
from tests.support.paths import EXAMPLE

HOSTS = names()
AGAIN = "activation-again"

# Where the hosts look for a project's own skills. A skill author's repository keeps its skills
# in one of these, and every workspace lies below the definition root: none may reach a subject,
# or the baseline would see the skill under test.
PROJECT_SKILL_FOLDERS = (
    ".agents/skills",
    ".claude/skills",
    ".codex/skills",
    ".gemini/skills",
    ".github/skills",
    ".opencode/skills",
    ".pi/skills",
)
PROJECT_COMMAND = "project-command-in-claude"
# The instructions files a host reads in a project and the directories above it.
PROJECT_INSTRUCTIONS = (
    "AGENTS.md",
    "CLAUDE.md",
    "GEMINI.md",
    ".github/copilot-instructions.md",
    ".claude/CLAUDE.md",
)
INSTRUCTIONS_MARKER = "PROJECT-INSTRUCTIONS-ABOVE-THE-WORKSPACE"


def project_skill(folder: str) -> str:
    return "project-skill-in-" + folder.split("/")[0].strip(".")


def _add_group_again(root: Path) -> None:
    """natural-activation again under another id, with its scripts."""
    group = json.loads((root / "groups" / "natural-activation.json").read_text("utf-8"))
    group["id"] = AGAIN
    (root / "groups" / f"{AGAIN}.json").write_text(json.dumps(group), "utf-8")
    shutil.copytree(root / "scripts" / "natural-activation", root / "scripts" / AGAIN)
    suite = json.loads((root / "suite.json").read_text("utf-8"))
    suite["groups"].append(f"groups/{AGAIN}.json")
    (root / "suite.json").write_text(json.dumps(suite), "utf-8")


def make_root(root: Path) -> Path:
    """The example suite with its third group, in a project that plants what must stay out."""
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".skill-eval"))
    _add_group_again(root)
    for folder in PROJECT_SKILL_FOLDERS:
        invisible_skill(root / folder, project_skill(folder))
    write(root / ".claude" / "commands" / f"{PROJECT_COMMAND}.md", "Must stay invisible.\n")
    for name in PROJECT_INSTRUCTIONS:
        write(root / name, f"Always say {INSTRUCTIONS_MARKER} ({name}).\n")
    # A repository, as a skill author's is: hosts read instructions up to its top.
    run_git(root, "init", "-q")
    return root


def args() -> list[str]:
    """The nested run's options: every host."""
    return [arg for host in HOSTS for arg in ("--skill-eval-host", host)]
