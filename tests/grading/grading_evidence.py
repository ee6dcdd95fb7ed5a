"""Build recorded run evidence (run.json, transcript, workspace, snapshots) for grading tests.

The builder plays a subject run forward the way the evidence layer records it: tool calls
change a real workspace, successful `read` calls become canonical read paths, turn snapshots
are copied and fingerprinted, and run.json is written with the documented shape.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_skill_eval.evidence.records import GradeRecord
from pytest_skill_eval.grading import grade_group
from pytest_skill_eval.run import synthetic_record

USAGE = {
    "input": 1200,
    "output": 40,
    "cacheRead": 0,
    "cacheWrite": 0,
    "cost": {"input": 0.0036, "output": 0.0006, "cacheRead": 0, "cacheWrite": 0, "total": 0.0042},
}


@dataclass
class Call:
    """One tool call: `ok` completed, `error` completed with isError, `incomplete` never ended."""

    name: str
    args: dict[str, Any]
    outcome: str = "ok"


@dataclass
class Turn:
    """One declared turn as the subject played it."""

    prompt: str
    response: str
    calls: list[Call] = field(default_factory=list)
    deletes: list[str] = field(default_factory=list)
    symlinks: dict[str, str] = field(default_factory=dict)


@dataclass
class Built:
    """A persisted variant run."""

    run: dict[str, Any]
    run_dir: Path
    sha256: str


def sha256(data: bytes) -> str:
    """Hex sha256."""
    return hashlib.sha256(data).hexdigest()


def _key(name: str) -> bytes:
    return name.encode("utf-16-be", "surrogatepass")


def fingerprint(root: Path) -> list[dict[str, str]]:
    """The evidence layer's fingerprint: sorted {path, type, sha256} entries."""
    entries: list[dict[str, str]] = []

    def walk(directory: Path, prefix: str) -> None:
        for name in sorted(os.listdir(directory), key=_key):
            full = directory / name
            rel = f"{prefix}{name}"
            if full.is_symlink():
                target = os.readlink(full)
                digest = sha256(b"symlink\0" + target.encode())
                entries.append({"path": rel, "type": "symlink", "sha256": digest})
            elif full.is_dir():
                entries.append({"path": rel, "type": "directory", "sha256": sha256(b"directory")})
                walk(full, rel + "/")
            else:
                entries.append({"path": rel, "type": "file", "sha256": sha256(full.read_bytes())})

    walk(root, "")
    return sorted(entries, key=lambda e: _key(e["path"]))


def changes(
    before: Sequence[Mapping[str, str]], after: Sequence[Mapping[str, str]]
) -> dict[str, Any]:
    """Created, modified and deleted non-directory paths in fingerprint order."""
    old = {e["path"]: e for e in before if e["type"] != "directory"}
    new = {e["path"]: e for e in after if e["type"] != "directory"}
    return {
        "created": [p for p in new if p not in old],
        "modified": [p for p in new if p in old and new[p]["sha256"] != old[p]["sha256"]],
        "deleted": [p for p in old if p not in new],
    }


def write_tree(root: Path, files: Mapping[str, str | bytes]) -> None:
    """Create files (parents included) under root."""
    root.mkdir(parents=True, exist_ok=True)
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)


def _snapshot_record(declared: str, source: Path, path: Path) -> dict[str, Any]:
    files = fingerprint(path)
    digest = sha256(json.dumps(files, separators=(",", ":")).encode())
    return {
        "declaredPath": declared,
        "sourcePath": str(source),
        "path": os.path.realpath(path),
        "files": files,
        "sha256": digest,
    }


def build_variant(
    result_dir: Path,
    variant: str,
    turns: Sequence[Turn],
    *,
    group_type: str = "body",
    one_shot: bool = False,
    fixture: Mapping[str, str | bytes] | None = None,
    skills: Sequence[Mapping[str, str]] = (),
    target: int | None = None,
    context: Sequence[Mapping[str, str]] = (),
    observations: Sequence[Mapping[str, Any]] | None = None,
    snapshot_turns: bool = False,
    state: str = "complete",
) -> Built:
    """Play `turns` in a fresh workspace and persist the variant's evidence."""
    run_dir = result_dir / "groups" / "grading-group" / variant
    workspace = run_dir / "workspace"
    write_tree(workspace, fixture or {})
    source_root = result_dir / "definition-root"

    skill_records = []
    for index, skill_files in enumerate(skills):
        skill_dir = run_dir / "resources" / "skills" / str(index)
        write_tree(skill_dir, skill_files)
        source = source_root / "skills" / f"skill-{index}"
        skill_records.append(_snapshot_record(f"skills/skill-{index}", source, skill_dir))
    context_records = []
    for index, context_files in enumerate(context):
        context_dir = run_dir / "resources" / "context" / str(index)
        write_tree(context_dir, context_files)
        source = source_root / "context" / f"context-{index}"
        context_records.append(_snapshot_record(f"context/{index}", source, context_dir))
    target_path = (
        os.path.realpath(Path(skill_records[target]["path"]) / "SKILL.md")
        if target is not None
        else None
    )
    fixture_record = (
        {
            "declaredPath": "fixtures/task",
            "sourcePath": str(source_root / "fixtures" / "task"),
            "snapshotPath": str(result_dir / "groups" / "grading-group" / "resources" / "fixture"),
            "files": fingerprint(workspace),
            "materializedPath": os.path.realpath(workspace),
        }
        if fixture is not None
        else None
    )

    def resolve(raw: str) -> str:
        raw = raw.removeprefix("@")
        for index, record in enumerate(skill_records):
            raw = raw.replace(f"{{skill:{index}}}", record["path"])
        for index, record in enumerate(context_records):
            raw = raw.replace(f"{{context:{index}}}", record["path"])
        return raw

    before = fingerprint(workspace)
    previous = before
    transcript: list[dict[str, Any]] = []
    turn_records: list[dict[str, Any]] = []
    clock = 1796073111580
    for number, turn in enumerate(turns, start=1):
        start = len(transcript)
        delivered = turn.prompt
        if group_type == "body" and number == 1 and target_path is not None:
            delivered = f"/skill:target-skill {turn.prompt}"
        transcript.append(
            {"role": "user", "content": [{"type": "text", "text": delivered}], "timestamp": clock}
        )
        activity: list[dict[str, Any]] = []
        reads: list[str] = []
        results: list[dict[str, Any]] = []
        content: list[dict[str, Any]] = []
        for index, call in enumerate(turn.calls):
            call_id = f"call_{number}_{index}"
            args = {k: resolve(v) if isinstance(v, str) else v for k, v in call.args.items()}
            content.append(
                {"type": "toolCall", "id": call_id, "name": call.name, "arguments": args}
            )
            completed = call.outcome != "incomplete"
            is_error = None if not completed else call.outcome == "error"
            activity.append(
                {
                    "toolCallId": call_id,
                    "toolName": call.name,
                    "args": args,
                    "completed": completed,
                    "isError": is_error,
                }
            )
            if call.outcome != "ok":
                if completed:
                    results.append(_tool_result(call_id, call.name, "ENOENT", True, clock))
                continue
            if call.name == "read":
                path = os.path.realpath(workspace / args["path"])
                reads.append(path)
                text = Path(path).read_text() if os.path.isfile(path) else ""
                results.append(_tool_result(call_id, "read", text, False, clock))
            elif call.name == "write":
                write_tree(workspace, {args["path"]: args["content"]})
                size = len(args["content"].encode())
                message = f"Successfully wrote {size} bytes to {args['path']}"
                results.append(_tool_result(call_id, "write", message, False, clock))
            else:
                results.append(_tool_result(call_id, call.name, "exit code: 0", False, clock))
        if content:
            transcript.append(_assistant([{"type": "text", "text": "Working."}, *content], clock))
            transcript.extend(results)
        transcript.append(_assistant([{"type": "text", "text": turn.response}], clock))
        for rel in turn.deletes:
            (workspace / rel).unlink()
        for rel, link in turn.symlinks.items():
            os.symlink(link, workspace / rel)
        snapshot: dict[str, Any] | None = None
        if snapshot_turns:
            copy = run_dir / "turns" / str(number) / "workspace"
            shutil.copytree(workspace, copy, symlinks=True)
            captured = fingerprint(copy)
            snapshot = {
                "path": os.path.realpath(copy),
                "files": captured,
                "changes": changes(before, captured),
                "changesSincePrevious": changes(previous, captured),
            }
            previous = captured
        turn_records.append(
            {
                "turn": number,
                "prompt": turn.prompt,
                "deliveredPrompt": delivered,
                "response": turn.response,
                "transcript": {"file": "transcript.json", "start": start, "end": len(transcript)},
                "successfulReadPaths": list(dict.fromkeys(reads)),
                "targetRead": target_path in reads,
                "toolActivity": activity,
                "promptAccepted": True,
                "settled": True,
                "assistantError": None,
                "usage": USAGE,
                "wallTimeMs": 850,
                "workspace": snapshot,
            }
        )
    after = fingerprint(workspace)
    all_reads = list(dict.fromkeys(p for t in turn_records for p in t["successfulReadPaths"]))
    read_turns = [t["turn"] for t in turn_records if t["targetRead"]]

    artifact = None
    if observations is not None:
        lines = "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in observations)
        data = lines.encode()
        (run_dir / "context-observations.jsonl").write_bytes(data)
        artifact = {
            "path": "context-observations.jsonl",
            "sha256": sha256(data),
            "bytes": len(data),
            "count": len(observations),
            "surfaces": sorted({o["surface"] for o in observations}),
        }

    prompts = [t.prompt for t in turns]
    run: dict[str, Any] = {
        "schema_version": 1,
        "variant": variant,
        "state": state,
        "evaluationType": group_type,
        "startedAt": "2026-11-30T21:11:51.566Z",
        "completedAt": "2026-11-30T21:11:53.101Z",
        "prompt": prompts[0] if one_shot else None,
        "prompts": prompts,
        "workspace": os.path.realpath(workspace),
        "tools": ["read", "write", "edit", "run_command"] if group_type == "body" else ["read"],
        "commands": [],
        "model": {"declared": None, "observed": {"provider": "fake", "model": "fake-model"}},
        "provider": {"mode": "scripted", "cassette": None, "sha256": None},
        "binary": {"version": "0.73.1", "command": "node_modules/.bin/pi"},
        "environment": {
            "names": ["HOME", "PATH", "PI_CODING_AGENT_DIR"],
            "literal": {},
            "inherit": [],
        },
        "resources": {
            "fixture": fixture_record,
            "source": {"kind": "working-tree", "root": str(source_root)},
            "skills": skill_records,
            "context": context_records,
            "runtime": {"host": "pi", "session": False, "prompt": "isolated", "extensions": []},
            "contextDelivery": {"kind": "none", "manifestPath": None, "sha256": None},
            "targetPath": target_path,
        },
        "turns": turn_records,
        "successfulReadPaths": all_reads,
        "activation": {
            "targetRead": bool(read_turns) if target_path is not None else False,
            "firstReadTurn": read_turns[0] if read_turns else None,
            "readTurns": read_turns,
            "successfulReadPaths": all_reads,
        },
        "response": turn_records[-1]["response"] if turn_records else "",
        "usage": USAGE,
        "effects": (
            {"before": before, "after": after, "changes": changes(before, after)}
            if group_type == "body"
            else None
        ),
        "contextObservationArtifact": artifact,
        "process": {
            "command": "node_modules/.bin/pi",
            "args": ["--mode", "rpc"],
            "exitCode": 0,
            "signal": None,
            "settled": True,
            "assistantError": None,
            "terminationReason": None,
            "parseErrors": [],
            "protocolErrors": [],
            "stderr": str(run_dir / "stderr.log"),
        },
        "artifacts": {
            "events": "events.jsonl",
            "final": "final.md",
            "stderr": "stderr.log",
            "context": "context-observations.jsonl" if artifact else None,
            "transcript": "transcript.json",
        },
        "error": None,
    }
    if group_type == "body":
        run["delivery"] = {
            "kind": "explicit-skill-command" if target_path else "natural-prompt",
            "turn": 1,
            "targetPath": target_path,
        }
    return _persist(run_dir, run, transcript)


def synthetic_run(
    result_dir: Path, variant: str, state: str, prompts: Sequence[str], group_type: str = "body"
) -> Built:
    """A run that never executed (not-selected, cancelled before start, invalid setup)."""
    run_dir = result_dir / "groups" / "grading-group" / variant
    run_dir.mkdir(parents=True, exist_ok=True)
    error = None if state == "not-selected" else {"kind": "cancellation", "message": "Cancelled"}
    run = dict(synthetic_record(variant, state, error, group_type, None, list(prompts)))
    return _persist(run_dir, run, [])


def _tool_result(call_id: str, name: str, text: str, error: bool, clock: int) -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": [{"type": "text", "text": text}],
        "isError": error,
        "timestamp": clock,
    }


def _assistant(content: list[dict[str, Any]], clock: int) -> dict[str, Any]:
    tool_use = any(part["type"] == "toolCall" for part in content)
    return {
        "role": "assistant",
        "content": content,
        "api": "openai-completions",
        "provider": "fake",
        "model": "fake-model",
        "usage": {**USAGE, "totalTokens": 1240},
        "stopReason": "toolUse" if tool_use else "stop",
        "timestamp": clock,
    }


def _persist(run_dir: Path, run: dict[str, Any], transcript: list[dict[str, Any]]) -> Built:
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "transcript.json").write_text(json.dumps(transcript, indent=2) + "\n")
    response = run["response"]
    (run_dir / "final.md").write_text(response + "\n" if response else "")
    data = (json.dumps(run, indent=2, ensure_ascii=False) + "\n").encode()
    (run_dir / "run.json").write_bytes(data)
    # Grade what a reader of the file sees, not the builder's in-memory dict.
    return Built(run=json.loads(data), run_dir=run_dir, sha256=sha256(data))


def group(group_type: str, expectations: Sequence[Any], prompts: Sequence[str]) -> dict[str, Any]:
    """A group definition as it is written in a definition file."""
    environment: dict[str, Any] = {
        "source": {"kind": "working-tree"},
        "skills": [],
        "target": None,
        "context": [],
    }
    return {
        "schema_version": 1,
        "kind": "group",
        "id": "grading-group",
        "type": group_type,
        "input": {"prompt": prompts[0]} if len(prompts) == 1 else {"turns": list(prompts)},
        "fixture": None,
        "tools": ["read"],
        "variants": {"baseline": environment, "candidate": environment},
        "expectations": list(expectations),
        "review_questions": [],
    }


def grade(definition: Mapping[str, Any], baseline: Built, candidate: Built) -> GradeRecord:
    """Grade a group from two persisted runs."""
    return grade_group(
        definition,
        {"baseline": baseline.run, "candidate": candidate.run},
        {"baseline": baseline.run_dir, "candidate": candidate.run_dir},
        {"baseline": baseline.sha256, "candidate": candidate.sha256},
    )


def only_check(result: Mapping[str, Any]) -> dict[str, Any]:
    """The single check of a one-expectation grade (fails loudly on grade errors)."""
    assert result["errors"] == [], result["errors"]
    checks: list[dict[str, Any]] = result["checks"]
    assert len(checks) == 1, checks
    return checks[0]
