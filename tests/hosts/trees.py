"""Small definition trees for end-to-end subject tests, and readers for the evidence they leave."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml

SKILL_DESCRIPTION = "Record changes in CHANGELOG.md. Use when asked to log or note a change."
WAIT_S = 120.0


def write(path: Path, text: str | bytes) -> Path:
    """Create `path` (and its parents) with `text`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def read_json(path: Path) -> Any:
    """Parse a JSON file."""
    return json.loads(path.read_text(encoding="utf-8"))


def skill(root: Path, name: str, body: str = "Follow these steps.\n") -> str:
    """A skill directory `skills/<name>/SKILL.md`; returns its declared path."""
    text = f"---\nname: {name}\ndescription: {SKILL_DESCRIPTION}\n---\n\n# {name}\n\n{body}"
    write(root / "skills" / name / "SKILL.md", text)
    return f"skills/{name}"


def variant(
    skills: Sequence[str] = (), target: int | None = None, context: Sequence[str] = ()
) -> dict[str, Any]:
    """One variant environment from the working tree."""
    return {
        "source": {"kind": "working-tree"},
        "skills": list(skills),
        "target": target,
        "context": list(context),
    }


@dataclass
class Group:
    """A group definition plus the scripts its variants replay."""

    id: str
    type: str
    turns: Sequence[str]
    tools: Sequence[str]
    candidate: dict[str, Any]
    baseline: dict[str, Any] = field(default_factory=variant)
    fixture: str | None = None
    commands: Sequence[Mapping[str, Any]] | None = None
    runtime: Mapping[str, Any] | None = None
    expectations: Sequence[Mapping[str, Any]] = ()
    scripts: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def definition(self) -> dict[str, Any]:
        """The group JSON."""
        prompt: dict[str, Any] = (
            {"prompt": self.turns[0]} if len(self.turns) == 1 else {"turns": list(self.turns)}
        )
        group: dict[str, Any] = {
            "schema_version": 1,
            "kind": "group",
            "id": self.id,
            "type": self.type,
            "input": prompt,
            "fixture": self.fixture,
            "tools": list(self.tools),
            "variants": {"baseline": self.baseline, "candidate": self.candidate},
            "expectations": list(self.expectations),
            "review_questions": [],
        }
        if self.commands is not None:
            group["commands"] = list(self.commands)
        if self.runtime is not None:
            group["runtime"] = dict(self.runtime)
        return group


def runtime(prompt: str = "isolated", literal: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A pi runtime profile with no bundles or session."""
    return {
        "host": "pi",
        "prompt": prompt,
        "session": False,
        "extensions": [],
        "environment": {"literal": dict(literal or {}), "inherit": []},
    }


def build(root: Path, groups: Iterable[Group]) -> Path:
    """Write each group, its scripts, and a suite listing them; returns the suite path."""
    references = []
    for group in groups:
        write(root / "groups" / f"{group.id}.json", json.dumps(group.definition(), indent=2))
        references.append(f"groups/{group.id}.json")
        for name, interactions in group.scripts.items():
            document = {"version": 1, "interactions": [{"response": i} for i in interactions]}
            write(root / "scripts" / group.id / f"{name}.yaml", yaml.safe_dump(document))
    suite = {"schema_version": 1, "kind": "suite", "id": "subject-e2e", "groups": references}
    return write(root / "suite.json", json.dumps(suite, indent=2))


def arguments(root: Path, suite: Path, *extra: str) -> list[str]:
    """The pytest arguments that run `suite` offline against its scripts."""
    return [
        "--skill-eval",
        str(suite),
        "--skill-eval-root",
        str(root),
        "--skill-eval-cassettes",
        str(root / "scripts"),
        "-p",
        "no:cacheprovider",
        *extra,
    ]


def popen(pytester: pytest.Pytester, args: Sequence[str]) -> Any:
    """Start pytest in a child process (like runpytest_subprocess) without waiting for it."""
    basetemp = pytester.path.parent / f"{pytester.path.name}-basetemp"
    command = [sys.executable, "-m", "pytest", f"--basetemp={basetemp}", *args]
    return pytester.popen(command, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def result_dir(root: Path) -> Path:
    """The single result directory of a run."""
    runs = sorted((root / ".skill-eval" / "runs").iterdir())
    assert len(runs) == 1, runs
    return runs[0]


def run_record(root: Path, group: str, name: str) -> dict[str, Any]:
    """A variant's run.json."""
    record: dict[str, Any] = read_json(result_dir(root) / "groups" / group / name / "run.json")
    return record


def model_requests(variant_dir: Path) -> list[dict[str, Any]]:
    """The requests the scripted model received, from model-requests.jsonl."""
    lines = (variant_dir / "model-requests.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def system_message(request: Mapping[str, Any]) -> str:
    """The system prompt of one OpenAI chat-completions request body."""
    messages = request["body"]["messages"]
    assert messages[0]["role"] == "system", messages[0]
    content = messages[0]["content"]
    assert isinstance(content, str)
    return content


def tool_results(request: Mapping[str, Any]) -> list[str]:
    """Tool results the model received in one request (the history included), in order."""
    return [
        m["content"]
        for m in request["body"]["messages"]
        if m.get("role") == "tool" and isinstance(m.get("content"), str)
    ]


def activity(run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every tool activity record of a run, in order."""
    return [a for turn in run["turns"] for a in turn["toolActivity"]]


def tree_bytes(directory: Path) -> Iterable[tuple[Path, bytes]]:
    """Every regular file below `directory` with its bytes (symlinks are not followed)."""
    for path in sorted(directory.rglob("*")):
        if path.is_file() and not path.is_symlink():
            yield path, path.read_bytes()


def wait_for(condition: Callable[[], Any], what: str, timeout: float = WAIT_S) -> Any:
    """Poll until `condition()` is truthy; fail the test (not hang) when it never is."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    pytest.fail(f"gave up waiting for {what}")


def pi_processes(below: Path) -> list[psutil.Process]:
    """Live processes whose working directory lies under `below` (subjects and their children)."""
    found = []
    prefix = str(below.resolve())
    for process in psutil.process_iter(["cwd"]):
        cwd = process.info.get("cwd")
        if not cwd or not (cwd == prefix or cwd.startswith(prefix + "/")):
            continue
        try:
            if process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
        except psutil.Error:
            continue
    return found


def events_containing(path: Path, event_type: str) -> int:
    """How many `event_type` events a (growing) events.jsonl holds so far."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return 0
    return text.count(f'"type":"{event_type}"')
