"""Gemini CLI's eager copy is the same Gemini CLI: one two-turn group, run from the copy and
from Gemini CLI's own files (`--skill-eval-gemini-eager off`), sends the same model requests,
does the same things in its workspace and leaves the same files (and the record says which
form ran).

This is the equivalence the copy rests on, for the pinned Gemini CLI, esbuild and Node: it runs
with the suite, so every change of the lock is checked by it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.support.files import write
from tests.support.roots import Group, build, runtime, skill, variant
from tests.support.runs import model_requests, result_dir, run_detached, run_record

pytestmark = [pytest.mark.pi, pytest.mark.gemini]

GROUP = "tidy@gemini-cli"  # its directory: the group on the host it declares
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z?")
_TEMPORARY = re.compile(r"skill-eval-gemini-cli-\w+")  # the subject's own home
_RESULT = re.compile(r"\d{14}-[0-9a-f]{8}")  # the result's id
_CALL = re.compile(r"(?<=_)\d{13}_\d+\b")  # a tool call's id: Gemini CLI's clock and a count


def _root(root: Path) -> Path:
    write(root / "fixture" / "notes.txt", "alpha\nbeta\n")
    declared = skill(root, "note-taker")
    edit = {"path": "notes.txt", "edits": [{"oldText": "beta", "newText": "gamma"}]}
    group = Group(
        id="tidy",
        turns=["Tidy the notes.", "Anything else?"],
        tools=["read", "write", "edit"],
        runtime=runtime(host="gemini-cli"),
        candidate=variant([declared], 0),
        scripts={
            "candidate": [
                {"tool_calls": [{"name": "skill", "arguments": {"name": "note-taker"}}]},
                {"tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]},
                {
                    "tool_calls": [
                        {"name": "edit", "arguments": edit},
                        {"name": "write", "arguments": {"path": "out/a.md", "content": "ok\n"}},
                        {"name": "read", "arguments": {"path": "missing.txt"}},
                    ]
                },
                {"text": "Tidied."},
                {"text": "Nothing else."},
            ]
        },
    )
    build(root, [group])
    return root


def _normalised(value: Any, root: Path) -> Any:
    """The run's own paths, ids and times replaced."""
    if isinstance(value, dict):
        return {key: _normalised(item, root) for key, item in value.items()}
    if isinstance(value, list):
        return [_normalised(item, root) for item in value]
    if isinstance(value, str):
        text = value.replace(str(root), "<root>")
        for pattern, name in ((_UUID, "uuid"), (_ISO, "time"), (_TEMPORARY, "home"),
                              (_RESULT, "result"), (_CALL, "call")):  # fmt: skip
            text = pattern.sub(f"<{name}>", text)
        return text
    return value


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The group's candidate run from the eager copy (the default) and from the own files."""
    roots = {}
    for form, extra in (("eager", ()), ("stock", ("--skill-eval-gemini-eager", "off"))):
        root = _root(tmp_path_factory.mktemp(form) / "root")
        done = run_detached(root, "--skill-eval-variant", "candidate", *extra)
        assert done.returncode == 0, done.stdout + done.stderr
        roots[form] = root
    return roots


def test_the_record_says_which_form_ran(both: dict[str, Path]) -> None:
    eager = run_record(both["eager"], GROUP, "candidate")["binary"]
    stock = run_record(both["stock"], GROUP, "candidate")["binary"]
    assert eager["form"]["kind"] == "eager"
    assert re.fullmatch(r"[0-9a-f]{64}", eager["form"]["sha256"])
    assert stock["form"] == {"kind": "stock"}
    assert eager["version"] == stock["version"] == "0.61.0"
    assert eager["runtime"] == stock["runtime"]  # the same pinned Node


def test_the_copy_sends_the_same_requests_and_does_the_same_things(
    both: dict[str, Path],
) -> None:
    requests, activity, effects = {}, {}, {}
    for form, root in both.items():
        run = run_record(root, GROUP, "candidate")
        assert run["state"] == "complete", run.get("error")
        variant_dir = result_dir(root) / "groups" / GROUP / "candidate"
        requests[form] = [
            _normalised(request["body"], root) for request in model_requests(variant_dir)
        ]
        activity[form] = [_normalised(turn["toolActivity"], root) for turn in run["turns"]]
        effects[form] = _normalised(run["effects"]["changes"], root)
        workspace = Path(run["workspace"])
        assert (workspace / "notes.txt").read_text("utf-8") == "alpha\ngamma\n"
    assert len(requests["eager"]) == 5
    assert json.dumps(requests["eager"]) == json.dumps(requests["stock"])
    assert activity["eager"] == activity["stock"]
    assert [a["isError"] for a in activity["eager"][0]] == [False, False, False, False, True]
    assert effects["eager"] == effects["stock"]


TAMPER = """
import os
from pathlib import Path

def pytest_configure_node(node):
    cache = Path(os.environ["XDG_CACHE_HOME"]) / "pytest-skill-eval" / "gemini-eager"
    for entry in cache.glob("*/pkg/bundle/gemini.js"):
        with entry.open("a") as appended:
            appended.write("\\n")
"""


def test_a_copy_changed_after_the_controller_checked_it_fails_each_run_saying_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The copy changes between the controller's check and a worker's start (an xdist hook
    appends to its entry): the worker does not crash; each of its runs is infrastructure-failed,
    naming the file."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = _root(tmp_path / "root")
    write(root / "conftest.py", TAMPER)
    done = run_detached(root, "--skill-eval-variant", "candidate", "-n", "1")
    printed = done.stdout + done.stderr
    assert done.returncode == 1, printed
    assert "Traceback" not in printed
    assert "INTERNALERROR" not in printed
    run = run_record(root, GROUP, "candidate")
    assert run["state"] == "infrastructure-failed"
    message = run["error"]["message"]
    assert message.startswith("the gemini-cli binary the controller checked cannot be used here: ")
    assert "pkg/bundle/gemini.js does not match" in message
