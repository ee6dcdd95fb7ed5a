"""What each host's own tools do to a scripted `write` and `edit` before the file is written
(docs/hosts.md, "Tools that change what they are given"): Claude Code strips the whitespace
that ends each line of a text file, not of a Markdown one; Codex ends an added file with a
newline; the others write the text as given."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_skill_eval.evidence import layout
from pytest_skill_eval.hosts.registration import HostRegistration
from tests.support import roots, runs
from tests.support.files import write
from tests.support.registry import host_params, run_on_host

pytestmark = pytest.mark.pi

NEW_TEXT = "beta   \ngamma\t \nend  "
CONTENT = "keep   \nx  "
# (file edited, file written) after the script, per host; a host not named writes them as given.
AS_GIVEN = (f"{NEW_TEXT}\nomega\n", CONTENT)
WRITTEN = {
    "claude-code": ("beta\ngamma\nend\nomega\n", "keep\nx"),
    "codex": (AS_GIVEN[0], f"{CONTENT}\n"),
}


def _calls(suffix: str) -> list[dict[str, Any]]:
    edit = {"path": f"notes{suffix}", "oldText": "alpha", "newText": NEW_TEXT}
    calls = [
        {"name": "read", "arguments": {"path": f"notes{suffix}"}},
        {"name": "edit", "arguments": edit},
        {"name": "write", "arguments": {"path": f"written{suffix}", "content": CONTENT}},
    ]
    return [{"tool_calls": [call], "stop": "tool_use"} for call in calls]


def _root(root: Path) -> Path:
    for suffix in (".txt", ".md"):
        write(root / "fixture" / f"notes{suffix}", "alpha\nomega\n")
    group = roots.Group(
        id="tool-arguments",
        type="body",
        turns=["Edit the notes."],
        tools=["read", "write", "edit"],
        fixture="fixture",
        candidate=roots.variant(),
        scripts={"candidate": [*_calls(".txt"), *_calls(".md"), {"text": "done"}]},
    )
    return roots.build(root, [group])


@pytest.mark.parametrize("registration", host_params())
def test_each_hosts_tools_write_what_the_docs_say(
    registration: HostRegistration, pytester: pytest.Pytester, tmp_path: Path
) -> None:
    host = registration.name
    root = tmp_path / "suite"
    _root(root)
    result = run_on_host(pytester, root, host, "--skill-eval-variant", "candidate")
    assert result.ret == 0, result.stdout.str()
    group_dir = layout.group_dir(runs.result_dir(root), "tool-arguments", host)
    workspace = group_dir / "candidate" / "workspace"

    def text(name: str) -> str:
        return (workspace / name).read_text(encoding="utf-8")

    assert (text("notes.txt"), text("written.txt")) == WRITTEN.get(host, AS_GIVEN)
    # Claude Code keeps a Markdown file's line-ending whitespace (two spaces are a line break).
    written = WRITTEN["codex"][1] if host == "codex" else CONTENT
    assert (text("notes.md"), text("written.md")) == (AS_GIVEN[0], written)
