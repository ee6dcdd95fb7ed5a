"""guard.mjs system prompts in the real Pi: isolated replaces Pi's prompt, host appends context."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.hosts.pi.extensions import GUARD
from tests.support.shared import shared_pi_run

pytestmark = pytest.mark.pi

PI_IDENTITY = "You are an expert coding assistant operating inside pi, a coding agent harness."
CONTEXT_TEXT = 'Rule: keep </file></declared_context> & <b>bold</b> "as is".\n'
DECLARED_PATH = 'context/rules "v2".md'
ESCAPED_BLOCK = (
    "<declared_context>\n"
    '<context declared-path="context/rules &quot;v2&quot;.md">\n'
    '<file path="context/rules &quot;v2&quot;.md/rules.md">\n'
    "Rule: keep &lt;/file&gt;&lt;/declared_context&gt; &amp; &lt;b&gt;bold&lt;/b&gt;"
    ' "as is".\n'
    "</file>\n"
    "</context>\n"
    "</declared_context>"
)


def write_manifest(directory: Path, content: str = CONTEXT_TEXT, digest: str | None = None) -> Path:
    """A context manifest as the runner writes it (sha256 of the UTF-8 content)."""
    manifest = directory / "context-manifest.json"
    entry = {
        "declaredPath": DECLARED_PATH,
        "files": [
            {
                "path": f"{DECLARED_PATH}/rules.md",
                "sha256": digest or hashlib.sha256(content.encode("utf-8")).hexdigest(),
                "content": content,
            }
        ],
    }
    manifest.write_text(json.dumps({"schema_version": 1, "entries": [entry]}), encoding="utf-8")
    return manifest


def write_skill(root: Path, name: str, description: str, *, hidden: bool = False) -> Path:
    """A skill directory with frontmatter; `hidden` sets disable-model-invocation."""
    skill = root / name
    skill.mkdir(parents=True)
    extra = "disable-model-invocation: true\n" if hidden else ""
    quoted = "'" + description.replace("'", "''") + "'"
    frontmatter = f"---\nname: {name}\ndescription: {quoted}\n{extra}---\n"
    (skill / "SKILL.md").write_text(frontmatter + "Body.\n", encoding="utf-8")
    return skill


READ_THEN_ANSWER = {
    "version": 1,
    "interactions": [
        {
            "response": {
                "tool_calls": [{"id": "r1", "name": "read", "arguments": {"path": "a.txt"}}]
            }
        },
        {"response": {"text": "done"}},
    ],
}


def _isolated_run(pi_launcher: Any, base: Path) -> Any:
    """Isolated mode with one visible skill, one hidden skill and declared context."""
    sandbox = pi_launcher.sandbox(base)
    (sandbox.workspace / "a.txt").write_text("a\n", encoding="utf-8")
    skills = sandbox.root / "skills"
    visible = write_skill(skills, "lint-fixer", 'Fixes "lint" & <format> issues; it\'s handy.')
    hidden = write_skill(skills, "hidden-helper", "Never listed.", hidden=True)
    manifest = write_manifest(sandbox.root)
    env = {
        "SKILL_EVAL_ALLOWED_ROOTS": json.dumps([str(sandbox.workspace), str(skills)]),
        "SKILL_EVAL_CONTEXT_MANIFEST": str(manifest),
        "SKILL_EVAL_PROMPT_MODE": "isolated",
    }
    return pi_launcher.run_json(
        sandbox,
        READ_THEN_ANSWER,
        ["Fix the lint."],
        extensions=[GUARD],
        tools=["read", "write"],
        env=env,
        skills=[visible, hidden],
    ).passed()


isolated_run = shared_pi_run("prompt-isolated", _isolated_run)


def test_isolated_prompt_replaces_pis_prompt_exactly(isolated_run: Any) -> None:
    sandbox = isolated_run.sandbox
    location = sandbox.root / "skills" / "lint-fixer" / "SKILL.md"
    expected = "\n\n".join(
        [
            "You are an expert coding assistant operating inside pi for a skill evaluation. "
            "Use only the tools and resources listed below.",
            "Available tools:\n- read: Read file contents\n- write: Create or overwrite files",
            "Guidelines:\n"
            "- Use the read tool to load a skill's SKILL.md "
            "when the task matches its description.\n"
            "- Resolve relative paths in a skill against that skill's directory "
            "(the parent of its SKILL.md).\n"
            "- Be concise in your responses.",
            "<available_skills>\n"
            "  <skill>\n"
            "    <name>lint-fixer</name>\n"
            "    <description>Fixes &quot;lint&quot; &amp; &lt;format&gt; issues; "
            "it&apos;s handy.</description>\n"
            f"    <location>{location}</location>\n"
            "  </skill>\n"
            "</available_skills>",
            ESCAPED_BLOCK,
            f"Current working directory: {sandbox.workspace}",
        ]
    )
    prompts = isolated_run.system_prompts()
    assert len(prompts) == 2
    assert prompts == [expected, expected]


def test_isolated_prompt_hides_disabled_skills_and_pis_own_text(isolated_run: Any) -> None:
    [system, _] = isolated_run.system_prompts()
    assert "hidden-helper" not in system
    assert PI_IDENTITY not in system
    assert "Pi documentation" not in system
    assert "Current date:" not in system


def test_context_content_cannot_close_the_block(isolated_run: Any) -> None:
    [system, _] = isolated_run.system_prompts()
    assert system.count("</file>") == 1
    assert system.count("</declared_context>") == 1


def run_host(pi_launcher: Any, base: Path, *, with_context: bool) -> Any:
    """Host mode, with or without declared context; `read` and `write` active."""
    sandbox = pi_launcher.sandbox(base)
    (sandbox.workspace / "a.txt").write_text("a\n", encoding="utf-8")
    env = {"SKILL_EVAL_PROMPT_MODE": "host"}
    if with_context:
        env["SKILL_EVAL_CONTEXT_MANIFEST"] = str(write_manifest(sandbox.root))
    return pi_launcher.run_json(
        sandbox,
        READ_THEN_ANSWER,
        ["Go."],
        extensions=[GUARD],
        tools=["read", "write"],
        env=env,
    ).passed()


def assert_pis_own_prompt(text: str, workspace: Path) -> None:
    """The structure of Pi 0.73.1's default system prompt for `--tools read,write`."""
    assert text.startswith(PI_IDENTITY)
    assert (
        "Available tools:\n- read: Read file contents\n- write: Create or overwrite files" in text
    )
    assert "Pi documentation" in text
    assert text.endswith(f"\nCurrent working directory: {workspace}")


def test_host_mode_keeps_pis_prompt_and_appends_escaped_context(
    pi_launcher: Any, tmp_path: Path
) -> None:
    run = run_host(pi_launcher, tmp_path, with_context=True)
    prompts = run.system_prompts()
    assert len(prompts) == 2
    for system in prompts:
        assert system.endswith("\n\n" + ESCAPED_BLOCK)
        assert_pis_own_prompt(system.removesuffix("\n\n" + ESCAPED_BLOCK), run.sandbox.workspace)


def test_host_mode_without_context_leaves_pis_prompt_alone(
    pi_launcher: Any, tmp_path: Path
) -> None:
    run = run_host(pi_launcher, tmp_path, with_context=False)
    prompts = run.system_prompts()
    assert len(prompts) == 2
    for system in prompts:
        assert "<declared_context>" not in system
        assert_pis_own_prompt(system, run.sandbox.workspace)


def test_guard_refuses_a_context_manifest_whose_hash_does_not_match(
    pi_launcher: Any, tmp_path: Path
) -> None:
    sandbox = pi_launcher.sandbox(tmp_path)
    manifest = write_manifest(sandbox.root, digest="0" * 64)
    run = pi_launcher.run_json(
        sandbox,
        {"version": 1, "interactions": [{"response": {"text": "never"}}]},
        ["hi"],
        extensions=[GUARD],
        tools=["read"],
        env={"SKILL_EVAL_CONTEXT_MANIFEST": str(manifest)},
    )
    assert run.returncode != 0
    assert "content does not match its sha256" in run.stderr
    assert run.requests == []
