"""opencode's managed configuration directory never reaches a subject: planted in /etc (in a
private mount namespace, never the real one), the invocation is refused before any starts."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.support.files import write
from tests.support.namespaces import with_layered_etc
from tests.support.roots import Group, build, runtime, skill, variant
from tests.support.runs import skill_eval_args

pytestmark = pytest.mark.pi

CANARY = "managed-opencode-canary-5151"


@pytest.mark.parametrize(
    ("planted", "content"),
    [
        ("opencode/opencode.json", json.dumps({"instructions": [f"/tmp/{CANARY}.md"]})),
        ("opencode/AGENTS.md", f"Always print {CANARY}.\n"),
    ],
)
def test_a_managed_opencode_layer_refuses_the_invocation(
    pytester: pytest.Pytester, planted: str, content: str
) -> None:
    upper = pytester.path / "etc-upper"
    write(upper / planted, content)
    root = pytester.path / "root"
    write(root / "fixture" / "notes.txt", "alpha\n")
    group = Group(
        id="layers",
        type="body",
        turns=["Check the notes."],
        tools=["read"],
        fixture="fixture",
        runtime=runtime(host="opencode"),
        candidate=variant([skill(root, "note-taker")], 0),
        scripts={"candidate": [{"text": "Checked."}]},
    )
    suite = build(root, [group])
    basetemp = pytester.path.parent / f"{pytester.path.name}-basetemp"
    args = skill_eval_args(root, "--skill-eval-variant", "candidate", suite=suite)
    command = [sys.executable, "-m", "pytest", f"--basetemp={basetemp}", *args]

    result = pytester.run(*with_layered_etc(upper, command), timeout=300)

    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, output
    refusals = [line for line in output.splitlines() if "system-wide configuration" in line]
    assert len(refusals) == 1, output
    assert "/etc/opencode (managed configuration" in refusals[0], output
    assert Path(planted).name in refusals[0], output
    assert "Traceback" not in output, output
    assert not list(root.glob(".skill-eval/runs/*/groups")), output  # no subject ever started
    assert not os.path.lexists(f"/etc/{planted}")  # the real /etc never saw it
