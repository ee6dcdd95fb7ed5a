"""The candidate's Pi pre-started during its baseline's model wait, end to end (real Pi)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_skill_eval.evidence import layout, verify_group
from pytest_skill_eval.run.prestart import ENV
from tests.support.files import read_json, write
from tests.support.processes import WAIT_S, events_containing, pi_processes, wait_for
from tests.support.roots import Group, build, runtime, skill, variant, write_script
from tests.support.runs import (
    model_requests,
    popen,
    reaped,
    result_dir,
    results,
    skill_eval_args,
)

pytestmark = pytest.mark.pi

# ms each baseline reply waits: the window the candidate starts in, wide enough for a start-up
# slot that other runs on the machine hold (startup.HOLD_S at the most).
LATENCY = 4000
SLOW = 60_000  # ms: the baseline is interrupted long before it answers


def _build(root: Path, baseline_latency: int, host: str = "pi") -> Path:
    """A two-turn body group on `host` whose baseline replies wait `baseline_latency` ms each."""
    write(root / "fixture" / "notes.txt", "alpha\n")
    declared = skill(root, "note-taker")
    group = Group(
        id="overlap",
        turns=["Read the notes.", "Append beta to them."],
        tools=["read", "write"],
        candidate=variant([declared], 0),
        runtime=runtime(host=host),
        scripts={
            "baseline": [
                {"text": "Nothing to do.", "latency_ms": baseline_latency},
                {"text": "Still nothing.", "latency_ms": baseline_latency},
            ],
            "candidate": [
                {"tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]},
                {"text": "Read them."},
                {
                    "tool_calls": [
                        {
                            "name": "write",
                            "arguments": {"path": "notes.txt", "content": "alpha\nbeta\n"},
                        }
                    ]
                },
                {"text": "Appended."},
            ],
        },
    )
    return build(root, [group])


def _mtime_utc(path: Path) -> str:
    """A file's modification time, written like the evidence's timestamps (milliseconds, Z)."""
    moment = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _facts(variant_dir: Path) -> dict[str, Any]:
    """What a candidate's evidence says happened, without timestamps and run-specific paths."""
    run = read_json(variant_dir / "run.json")
    turns = [{k: v for k, v in turn.items() if k not in ("wallTimeMs",)} for turn in run["turns"]]
    facts = {
        "state": run["state"],
        "error": run["error"],
        "turns": turns,
        "delivery": run.get("delivery"),  # a body group's
        "activation": run["activation"],
        "effects": (run.get("effects") or {}).get("changes"),  # a body group's
        "usage": run["usage"],
        "response": run["response"],
        "settled": run["process"]["settled"],
        "terminationReason": run["process"]["terminationReason"],
        "exitCode": run["process"]["exitCode"],
        # The system prompt says the date and time: the conversation after it is the fact.
        "requests": [_conversation(r["body"]) for r in model_requests(variant_dir)],
        "grade": [
            (c["id"], c["state"]) for c in read_json(variant_dir.parent / layout.GRADE)["checks"]
        ],
    }
    text = json.dumps(facts, sort_keys=True).replace(str(variant_dir.parent.parent.parent), "R")
    # Each subject's isolated home is a fresh temporary directory (Claude Code names it).
    text = re.sub(r"/skill-eval-[a-z-]+-[a-z0-9_]{8}/", "/HOME/", text)
    # Codex numbers and times each command's output.
    text = re.sub(r"Chunk ID: [0-9a-f]+", "Chunk ID: C", text)
    text = re.sub(r"Wall time: [0-9.]+ seconds", "Wall time: T seconds", text)
    return dict(json.loads(text))


def _conversation(body: dict[str, Any]) -> list[Any]:
    """A request's conversation: its messages after the system prompt (which says the time);
    a Responses API request's input items without the ids each run mints."""
    if "messages" in body:
        return [m for m in body["messages"] if m.get("role") != "system"]
    return [{k: v for k, v in item.items() if k != "id"} for item in body["input"]]


def _pre_started_as_without(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    root: Path,
    suite: Path,
    group_dir: Path,
) -> None:
    """The candidate of `group_dir` was spawned while its baseline waited on the model and
    prompted (its run began) only once the baseline's run.json was on disk; the same run
    without pre-start records the same facts."""
    baseline = read_json(group_dir / "baseline" / "run.json")
    candidate = read_json(group_dir / "candidate" / "run.json")
    persisted = _mtime_utc(group_dir / "baseline" / "run.json")
    assert candidate["process"]["spawnedAt"] < baseline["completedAt"]
    assert candidate["process"]["promptedAt"] >= persisted
    assert candidate["startedAt"] >= persisted
    assert candidate["process"]["spawnedAt"] < candidate["process"]["promptedAt"]
    assert baseline["process"]["spawnedAt"] <= baseline["process"]["promptedAt"]
    assert verify_group(group_dir) == []
    assert pi_processes(root) == []

    monkeypatch.setenv(ENV, "0")
    # Without pre-start there is no window to keep open: the same replies need not wait.
    for script in (root / "scripts").rglob("*.yaml"):
        interactions = yaml.safe_load(script.read_text(encoding="utf-8"))["interactions"]
        for interaction in interactions:
            interaction.get("response", {}).pop("latency_ms", None)
        write_script(script, interactions)
    again = pytester.runpytest_subprocess(*skill_eval_args(root, suite=suite))
    assert again.ret == 0, again.stdout.str()
    first, second = (run / "groups" / group_dir.name for run in results(root))
    unstarted = read_json(second / "candidate" / "run.json")
    assert (
        unstarted["process"]["spawnedAt"]
        > read_json(second / "baseline" / "run.json")["completedAt"]
    )
    for side in ("baseline", "candidate"):
        assert _facts(first / side) == _facts(second / side)


def test_a_pre_started_candidate_is_spawned_early_and_prompted_after_its_baseline_is_on_record(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = pytester.path / "root"
    suite = _build(root, LATENCY)
    result = pytester.runpytest_subprocess(*skill_eval_args(root, suite=suite))
    assert result.ret == 0, result.stdout.str()
    _pre_started_as_without(
        pytester, monkeypatch, root, suite, result_dir(root) / "groups" / "overlap"
    )


@pytest.mark.parametrize(
    "host",
    [
        # Its prompts are stream-json lines on stdin.
        pytest.param("claude-code", marks=pytest.mark.claude),
        # Its app-server opens its thread, then waits for the first turn/start.
        pytest.param("codex", marks=pytest.mark.codex),
    ],
)
def test_a_host_that_reads_its_prompts_on_stdin_has_its_candidate_pre_started_too(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, host: str
) -> None:
    root = pytester.path / "root"
    suite = _build(root, LATENCY, host)
    result = pytester.runpytest_subprocess(*skill_eval_args(root, suite=suite))
    assert result.ret == 0, result.stdout.str()
    group_dir = result_dir(root) / "groups" / f"overlap@{host}"
    candidate = read_json(group_dir / "candidate" / "run.json")
    assert candidate["state"] == "complete", candidate["error"]
    _pre_started_as_without(pytester, monkeypatch, root, suite, group_dir)


def _held(root: Path, where: str = "overlap/candidate", responses: int = 3) -> Path | None:
    """The variant's directory once its pre-started Pi answered its set-up commands (three with
    a skill to list; two without, as for a baseline)."""
    runs = root / ".skill-eval" / "runs"
    found = sorted(runs.glob(f"*/groups/{where}")) if runs.is_dir() else []
    if not found or events_containing(found[0] / "events.jsonl", "response") < responses:
        return None
    return found[0]


def test_a_pre_started_host_that_dies_while_held_is_discarded_and_its_variant_runs_afresh(
    pytester: pytest.Pytester,
) -> None:
    root = pytester.path / "root"
    suite = _build(root, LATENCY)
    with reaped(popen(pytester, skill_eval_args(root, suite=suite))) as child:
        held = wait_for(lambda: _held(root), "the pre-started candidate's Pi")
        for process in pi_processes((held / "workspace").resolve()):
            process.kill()  # it dies before its run may begin
        assert not (held.parent / "baseline" / "run.json").exists()
        out, _ = child.communicate(timeout=WAIT_S)
    assert child.returncode == 0, out
    group_dir = result_dir(root) / "groups" / "overlap"
    baseline = read_json(group_dir / "baseline" / "run.json")
    candidate = read_json(group_dir / "candidate" / "run.json")
    assert candidate["state"] == "complete", candidate["error"]
    # Not the host that died: one spawned for the candidate's own run, after its baseline's.
    assert candidate["process"]["spawnedAt"] > baseline["completedAt"]
    assert verify_group(group_dir) == []


def test_a_cancelled_group_kills_its_pre_started_candidate_and_records_it_as_never_run(
    pytester: pytest.Pytester,
) -> None:
    root = pytester.path / "root"
    suite = _build(root, SLOW)
    with reaped(popen(pytester, skill_eval_args(root, "-v", suite=suite))) as child:
        try:
            held = wait_for(lambda: _held(root), "the pre-started candidate's Pi")
            workspace = (held / "workspace").resolve()
            assert pi_processes(workspace)  # started, and waiting unprompted
            assert not (held.parent / "baseline" / "run.json").exists()
            child.send_signal(signal.SIGINT)
            out, _ = child.communicate(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            child.kill()
            out, _ = child.communicate()
            pytest.fail(f"pytest did not stop after Ctrl-C:\n{out!r}")
    assert child.returncode == pytest.ExitCode.INTERRUPTED, out
    assert pi_processes(root) == []  # the baseline and the held candidate: both reaped

    group_dir = result_dir(root) / "groups" / "overlap"
    baseline = read_json(group_dir / "baseline" / "run.json")
    assert baseline["state"] == "cancelled"
    assert baseline["process"]["terminationReason"] == "cancelled"
    candidate = read_json(group_dir / "candidate" / "run.json")
    assert candidate["state"] == "cancelled"
    assert candidate["error"] == {
        "kind": "cancellation",
        "message": "Cancelled before subject execution",
    }
    assert candidate["turns"] == []
    assert read_json(group_dir / "candidate" / "transcript.json") == []
    # Nothing of the pre-start is left: the directory of a variant that never started.
    assert sorted(p.name for p in (group_dir / "candidate").iterdir()) == [
        "final.md",
        "run.json",
        "transcript.json",
    ]
    assert verify_group(group_dir) == []


def _one_shot(pytester: pytest.Pytester, host: str) -> tuple[Path, Path, Path]:
    """A one-shot description group on `host` whose baseline answers after `LATENCY`, run
    once: (definition root, suite, the group's result directory)."""
    root = pytester.path / "root"
    declared = skill(root, "note-taker")
    group = Group(
        id="one-shot",
        type="description",
        turns=["Log the change."],
        tools=["read"],
        candidate=variant([declared], 0),
        runtime=runtime(host=host),
        scripts={
            "baseline": [{"text": "Logged.", "latency_ms": LATENCY}],
            "candidate": [{"text": "Logged."}],
        },
    )
    suite = build(root, [group])
    result = pytester.runpytest_subprocess(*skill_eval_args(root, suite=suite))
    assert result.ret == 0, result.stdout.str()
    name = "one-shot" if host == "pi" else f"one-shot@{host}"
    return root, suite, result_dir(root) / "groups" / name


@pytest.mark.parametrize("host", ["pi", pytest.param("codex", marks=pytest.mark.codex)])
def test_a_one_shot_group_is_not_pre_started(pytester: pytest.Pytester, host: str) -> None:
    # Pi's prompt is in argv; a one-shot Codex is over too soon for a pre-start to pay.
    _, _, group_dir = _one_shot(pytester, host)
    baseline = read_json(group_dir / "baseline" / "run.json")
    candidate = read_json(group_dir / "candidate" / "run.json")
    # Spawned only after the baseline is on record (Pi's spawning is its prompting).
    assert candidate["startedAt"] <= candidate["process"]["spawnedAt"]
    assert candidate["process"]["spawnedAt"] >= _mtime_utc(group_dir / "baseline" / "run.json")
    if host == "pi":
        assert candidate["process"]["promptedAt"] == candidate["process"]["spawnedAt"]
        assert baseline["process"]["promptedAt"] == baseline["process"]["spawnedAt"]


def test_opencode_reads_its_prompt_on_stdin_so_even_a_one_shot_candidate_is_pre_started(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, suite, group_dir = _one_shot(pytester, "opencode")
    candidate = read_json(group_dir / "candidate" / "run.json")
    assert candidate["state"] == "complete", candidate["error"]
    # Spawned (and loaded) while the baseline waited on the model; its prompt went to its stdin
    # only once the baseline's run.json was on disk.
    _pre_started_as_without(pytester, monkeypatch, root, suite, group_dir)


@pytest.mark.parametrize(
    "host",
    [
        "pi",
        "opencode",
        pytest.param("claude-code", marks=pytest.mark.claude),
        pytest.param("codex", marks=pytest.mark.codex),
    ],
)
def test_a_pre_started_candidate_whose_item_never_runs_is_recorded_as_never_run(
    pytester: pytest.Pytester, host: str
) -> None:
    root = pytester.path / "root"
    write(root / "fixture" / "notes.txt", "alpha\n")
    declared = skill(root, "note-taker")
    group = Group(
        id="stopped",
        turns=["Read the notes.", "Append beta to them."],
        tools=["read"],
        candidate=variant([declared], 0),
        runtime=runtime(host=host),
        # The baseline's second answer is an error no host retries: its run fails, and -x stops
        # the session before the candidate's item, whose host was started during the baseline's
        # first reply.
        scripts={
            "baseline": [
                {"text": "Nothing to do.", "latency_ms": LATENCY},
                {"error": {"status": 400, "message": "no second answer"}},
            ],
            "candidate": [{"text": "Read them."}, {"text": "Appended."}],
        },
    )
    suite = build(root, [group])
    name = "stopped" if host == "pi" else f"stopped@{host}"
    with reaped(popen(pytester, skill_eval_args(root, "-x", suite=suite))) as child:
        # The candidate's host runs (held) while the baseline waits on its first reply.
        wait_for(lambda: _host_in(root, f"*/groups/{name}/candidate/workspace"), "its held host")
        out, _ = child.communicate(timeout=WAIT_S)
    assert child.returncode == pytest.ExitCode.TESTS_FAILED, out
    assert pi_processes(root) == []
    group_dir = result_dir(root) / "groups" / name
    baseline = read_json(group_dir / "baseline" / "run.json")
    assert baseline["state"] != "complete"
    candidate = read_json(group_dir / "candidate" / "run.json")
    assert candidate["state"] == "cancelled"
    assert candidate["turns"] == []
    assert sorted(p.name for p in (group_dir / "candidate").iterdir()) == [
        "final.md",
        "run.json",
        "transcript.json",
    ]
    assert verify_group(group_dir) == []


def _host_in(root: Path, pattern: str) -> bool:
    """Whether a live process works in a directory of the results matching `pattern`."""
    runs = root / ".skill-eval" / "runs"
    found = sorted(runs.glob(pattern)) if runs.is_dir() else []
    return bool(found) and bool(pi_processes(found[0].resolve()))


def _two_groups(root: Path, first_candidate: list[dict[str, Any]], turns: int = 1) -> Path:
    """Groups `first` then `second`: `first`'s candidate replies `first_candidate`."""
    write(root / "fixture" / "notes.txt", "alpha\n")
    declared = skill(root, "note-taker")
    prompts = ["Read the notes.", "Append beta to them."][:turns]
    replies = [{"text": f"Reply {n}."} for n in range(turns)]
    groups = [
        Group(
            id=group_id,
            turns=prompts,
            tools=["read"],
            candidate=variant([declared], 0),
            scripts={
                "baseline": replies,
                "candidate": first_candidate if group_id == "first" else replies,
            },
        )
        for group_id in ("first", "second")
    ]
    return build(root, groups)


def test_the_next_groups_baseline_is_pre_started_during_the_last_subject_of_the_group_before(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = pytester.path / "root"
    suite = _two_groups(root, [{"text": "Read them.", "latency_ms": LATENCY}])
    result = pytester.runpytest_subprocess(*skill_eval_args(root, "-p", "no:randomly", suite=suite))
    assert result.ret == 0, result.stdout.str()
    groups = result_dir(root) / "groups"
    before = read_json(groups / "first" / "candidate" / "run.json")
    baseline = read_json(groups / "second" / "baseline" / "run.json")
    # Spawned while the first group's candidate still waited on the model ...
    assert baseline["process"]["spawnedAt"] < before["completedAt"]
    # ... and prompted only once the first group was graded and on record.
    assert baseline["startedAt"] >= _mtime_utc(groups / "first" / layout.GROUP)
    assert baseline["process"]["promptedAt"] >= _mtime_utc(groups / "first" / layout.GROUP)
    assert verify_group(groups / "first") == []
    assert verify_group(groups / "second") == []
    assert pi_processes(root) == []

    monkeypatch.setenv(ENV, "0")
    again = pytester.runpytest_subprocess(*skill_eval_args(root, "-p", "no:randomly", suite=suite))
    assert again.ret == 0, again.stdout.str()
    first, second = results(root)
    unstarted = read_json(second / "groups" / "second" / "baseline" / "run.json")
    assert unstarted["process"]["spawnedAt"] > _mtime_utc(
        second / "groups" / "first" / layout.GROUP
    )
    for group_id in ("first", "second"):
        assert _names(first / "groups" / group_id) == _names(second / "groups" / group_id)
        for name in ("baseline", "candidate"):
            assert _facts(first / "groups" / group_id / name) == _facts(
                second / "groups" / group_id / name
            )


def test_a_pre_started_next_group_whose_items_never_run_is_left_as_never_started(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = pytester.path / "root"
    # The first group's candidate has one reply for two turns: its run fails after it, and -x
    # stops the session before the second group, whose baseline was started during that reply.
    suite = _two_groups(root, [{"text": "Read them.", "latency_ms": LATENCY}], turns=2)
    with reaped(
        popen(pytester, skill_eval_args(root, "-x", "-p", "no:randomly", suite=suite))
    ) as child:
        held = wait_for(
            lambda: _held(root, "second/baseline", 2), "the second group's pre-started Pi"
        )
        assert pi_processes((held / "workspace").resolve())  # started, waiting unprompted
        out, _ = child.communicate(timeout=WAIT_S)
    assert child.returncode == pytest.ExitCode.TESTS_FAILED, out
    assert pi_processes(root) == []
    groups = result_dir(root) / "groups"
    assert read_json(groups / "first" / "candidate" / "run.json")["state"] != "complete"
    # Recorded as a group whose items never ran: nothing of the pre-start is left.
    for name in ("baseline", "candidate"):
        run = read_json(groups / "second" / name / "run.json")
        assert (run["state"], run["turns"]) == ("cancelled", [])
    assert verify_group(groups / "second") == []
    # The same tree as a run without pre-start leaves.
    monkeypatch.setenv(ENV, "0")
    again = pytester.runpytest_subprocess(
        *skill_eval_args(root, "-x", "-p", "no:randomly", suite=suite)
    )
    assert again.ret == pytest.ExitCode.TESTS_FAILED, again.stdout.str()
    held, plain = (r / "groups" / "second" for r in results(root))
    assert _names(held) == _names(plain)
    for name in ("baseline", "candidate"):
        kept = read_json(held / name / "run.json"), read_json(plain / name / "run.json")
        assert [{k: r[k] for k in ("state", "error", "turns")} for r in kept] == [
            {"state": "cancelled", "error": kept[1]["error"], "turns": []}
        ] * 2


def _names(directory: Path) -> list[str]:
    return sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*"))


def test_a_next_group_that_cannot_be_held_is_not_pre_started(pytester: pytest.Pytester) -> None:
    root = pytester.path / "root"
    declared = skill(root, "note-taker")
    groups = [
        Group(
            id="first",
            turns=["Read the notes."],
            tools=["read"],
            fixture=None,
            candidate=variant([declared], 0),
            scripts={
                "baseline": [{"text": "Nothing."}],
                "candidate": [{"text": "Read them.", "latency_ms": LATENCY}],
            },
        ),
        # One-shot: its prompt is in argv, so spawning it would be running it.
        Group(
            id="second",
            type="description",
            turns=["Log the change."],
            tools=["read"],
            candidate=variant([declared], 0),
            scripts={"baseline": [{"text": "Logged."}], "candidate": [{"text": "Logged."}]},
        ),
    ]
    suite = build(root, groups)
    result = pytester.runpytest_subprocess(*skill_eval_args(root, "-p", "no:randomly", suite=suite))
    assert result.ret == 0, result.stdout.str()
    groups_dir = result_dir(root) / "groups"
    before = _mtime_utc(groups_dir / "first" / layout.GROUP)
    # Nothing of the second group, its directory included, began before the first was done.
    assert _mtime_utc(groups_dir / "second" / layout.DEFINITION) >= before
    baseline = read_json(groups_dir / "second" / "baseline" / "run.json")
    assert baseline["process"]["spawnedAt"] >= before
    assert len(model_requests(groups_dir / "second" / "baseline")) == 1
