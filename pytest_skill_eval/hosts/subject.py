"""Run one variant's subject on its host: evidence, watchdog, cancellation, the run record.

Nothing here names a host: the isolated home, argv, environment baseline and event stream come
from the `Host` that `runtime.host` selects (`hosts.host_for`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..definitions import WORKSPACE_KINDS, Group
from ..errors import DiskFullError, HostError
from ..evidence import EvidenceError, json_bytes, layout, utc_now, write_once
from ..evidence.records import SystemLayerRecord
from ..evidence.redact import Tally
from ..evidence.store import disk_full
from ..workspace import (
    ResourceError,
    changes,
    fingerprint,
    fingerprint_from_json,
    fingerprint_json,
    snapshot_workspace_turn,
)
from ..workspace.materialise import PreparedVariant, immutable_changes
from . import host_for, prestart
from .base import (
    Endpoint,
    Executable,
    Home,
    Host,
    Launch,
    host_record,
    isolated_home,
    launch_process,
    spend_record,
)
from .context_records import context_artifact_of, copy_observer_records, write_request_observations
from .credentials import how_to_declare, provider_of
from .failures import credential_refusal, run_state, why_incomplete
from .layers import kept_out
from .observation import Observation, Turn, canonical_reads, sum_usage
from .process import NO_PROGRESS_S, CancelToken, HostProcess, ProcessOutcome, set_aside_partial
from .redaction import markers, redact_tree, subject_redactor

__all__ = ["Endpoint", "SetupError", "SubjectResult", "run_subject"]

MODEL_REQUESTS = layout.MODEL_REQUESTS
CONTEXT = layout.CONTEXT_OBSERVATIONS


class SetupError(HostError):
    """The variant could not be set up (the run is `invalid`)."""


@dataclass
class SubjectResult:
    """The run record (run.json without the transcript) and the artifacts beside it."""

    run: dict[str, Any]
    transcript: list[dict[str, Any]]
    response: str
    # The results disk filled while the run was recorded: what could be written is, and the
    # invocation stops once the run record is on disk.
    disk_full: DiskFullError | None = None


def needs_turn_snapshots(group: Group) -> bool:
    """Turn-scoped workspace expectations need an immutable workspace copy after each turn."""
    return any(e.kind in WORKSPACE_KINDS and e.turn is not None for e in group.expectations)


def needs_observer(group: Group) -> bool:
    """Only groups with context-text expectations load the context observer."""
    return any(e.kind == "context-text" for e in group.expectations)


def evaluator_environment(
    group: Group, prepared: PreparedVariant, turn_file: Path
) -> dict[str, str]:
    """Literal + evaluator variables + inherited (reference §4.3), over the host's baseline."""
    runtime = group.effective_runtime
    env = dict(runtime.environment.literal)
    env |= {
        "SKILL_EVAL_ALLOWED_ROOTS": json.dumps(prepared.allowed_roots()),
        "SKILL_EVAL_WRITABLE_ROOT": str(prepared.workspace),
        "SKILL_EVAL_ALLOWED_TOOLS": json.dumps(list(group.tools)),
        "SKILL_EVAL_CONTEXT_MANIFEST": str(prepared.context_manifest or ""),
        "SKILL_EVAL_HOST": runtime.host,
        "SKILL_EVAL_PROMPT_MODE": runtime.prompt,
        "SKILL_EVAL_TURN_FILE": str(turn_file),
    }
    if group.commands is not None:
        env["SKILL_EVAL_COMMANDS"] = json.dumps(
            [c.model_dump(by_alias=True, exclude_none=True) for c in group.commands]
        )
    if needs_observer(group):
        env["SKILL_EVAL_CONTEXT_OBSERVATION_PATH"] = str(prepared.directory / CONTEXT)
    for key in runtime.environment.inherit:
        if key not in os.environ:
            raise SetupError(
                f"inherited runtime environment variable is unavailable: {key} "
                f"(set it in the environment that runs pytest, or drop it from "
                f"runtime.environment.inherit)"
            )
        env[key] = os.environ[key]
    return env


def subject_launch(
    group: Group, prepared: PreparedVariant, endpoint: Endpoint, home: Home, no_progress_s: float
) -> Launch:
    """The host-neutral description of one variant's subject run."""
    turn_file = home.root / "turn"
    one_shot = group.is_one_shot
    environment = evaluator_environment(group, prepared, turn_file)
    redactor = subject_redactor(group, endpoint, environment)
    if redactor and "SKILL_EVAL_CONTEXT_OBSERVATION_PATH" in environment:
        # The observer writes raw text: it lands outside the result and is copied redacted.
        environment["SKILL_EVAL_CONTEXT_OBSERVATION_PATH"] = str(home.root / CONTEXT)
    return Launch(
        cwd=prepared.workspace,
        prompts=tuple(group.turns),
        one_shot=one_shot,
        events_path=prepared.directory / "events.jsonl",
        stderr_path=prepared.directory / "stderr.log",
        model=endpoint.model,
        tools=tuple(group.tools),
        skills=tuple(s.path for s in prepared.skills),
        session_dir=prepared.session_dir,
        guard=True,
        command_tool=group.commands is not None,
        observe_context=needs_observer(group),
        plugins=tuple(prepared.bundle_entries),
        target=prepared.target_path if group.type == "body" else None,
        turn_file=turn_file,
        environment=environment,
        no_progress_s=no_progress_s,
        redactor=redactor,
    )


def run_subject(
    *,
    group: Group,
    prepared: PreparedVariant,
    binary: Executable,
    endpoint: Endpoint,
    cancel: CancelToken,
    no_progress_s: float = NO_PROGRESS_S,
    gate: prestart.PromptGate | None = None,
) -> SubjectResult:
    """Run the host for one variant (a held `gate` holds its first prompt); never loses evidence."""
    started = utc_now()
    try:
        host = host_for(group.effective_runtime.host)
        # The isolated home may hold credentials: it never becomes evidence.
        with isolated_home(host, endpoint, prefix=f"skill-eval-{host.name}-") as home:
            launch = subject_launch(group, prepared, endpoint, home, no_progress_s)
            # Later writes under the group (grades, records) and the cassette are redacted too.
            launch = prestart.gated(launch, gate, prepared.directory.parent, endpoint)
            return _run(group, prepared, host, binary, endpoint, launch, home, cancel, started)
    finally:
        endpoint.close()


def _run(
    group: Group,
    prepared: PreparedVariant,
    host: Host,
    binary: Executable,
    endpoint: Endpoint,
    launch: Launch,
    home: Home,
    cancel: CancelToken,
    started: str,
) -> SubjectResult:
    # Checked before the invocation began; one that appeared since stops this subject unstarted.
    layers = kept_out(host.display_name, host.system_layers)
    argv, env, process = launch_process(host, binary, launch, home)
    tally = Tally()
    facts = _Facts(
        group, prepared, host, binary, endpoint, argv, env, started, launch, home, tally, layers
    )
    try:
        prestart.start_when_free(process, launch.gate, endpoint.received, cancel)
    except OSError as failure:
        # The host could not be spawned (binary gone, bad interpreter): still a run on record.
        unstarted = Observation()
        unstarted.protocol_error(
            "process-error", message=f"could not start {host.display_name}: {failure}"
        )
        outcome = ProcessOutcome(termination_reason="process-error")
        return _record(facts, unstarted, outcome, process)
    snapshots = needs_turn_snapshots(group) and group.type == "body"
    previous: list[Any] = [None]

    def after_turn(turn: Turn) -> None:
        facts.turn_ends.append((turn.turn, endpoint.received() if endpoint.received else 0))
        if not snapshots:
            return
        try:
            copy = prepared.directory / "turns" / str(turn.turn) / "workspace"
            turn.workspace = snapshot_workspace_turn(
                prepared.workspace, copy, prepared.before, previous[0]
            )
            previous[0] = fingerprint_from_json(turn.workspace["files"])
            redact_tree(launch.redactor, copy, prepared.directory, tally)
        except (ResourceError, OSError) as failure:
            dialogue.observation.protocol_error("operation-failed", message=str(failure))

    dialogue = host.converse(process, cancel, launch, after_turn)
    try:
        obs, outcome = dialogue.run()
    except Exception as failure:
        # An unforeseen failure while talking to the host: stop it, keep what was observed.
        dialogue.process.kill_now()
        obs = dialogue.observation
        obs.protocol_error("process-error", message=f"{type(failure).__name__}: {failure}")
        if dialogue.outcome.termination_reason is None:
            dialogue.outcome.termination_reason = "process-error"
        outcome = dialogue.process.finish(dialogue.outcome)
        for turn in obs.turns:
            turn.finish()
    except BaseException:
        # A second Ctrl-C (KeyboardInterrupt) stops at once, but never leaves the host running.
        dialogue.process.kill_now()
        raise
    return _record(facts, obs, outcome, dialogue.process)


@dataclass(frozen=True)
class _Facts:
    """What the run record needs besides the observation: the run as it was launched."""

    group: Group
    prepared: PreparedVariant
    host: Host
    binary: Executable
    endpoint: Endpoint
    argv: list[str]
    env: Mapping[str, str]
    started: str
    launch: Launch
    home: Home
    tally: Tally
    layers: list[SystemLayerRecord]
    turn_ends: list[tuple[int, int]] = field(default_factory=list)  # (turn, requests by then)
    disk_full: list[DiskFullError] = field(default_factory=list)  # the first write a full disk cut


def _record(
    facts: _Facts, obs: Observation, outcome: ProcessOutcome, process: HostProcess
) -> SubjectResult:
    """Post-run facts. Each step that fails is recorded beside the evidence, never instead of it."""
    group, prepared, endpoint, argv, env = (
        facts.group,
        facts.prepared,
        facts.endpoint,
        facts.argv,
        facts.env,
    )
    redactor, tally = facts.launch.redactor, facts.tally
    for name, counts in process.redactions.items():
        tally.add(name, counts)
    late_errors: list[str] = []
    for name, cut in ((layout.EVENTS, process.events_error), (layout.STDERR, process.stderr_error)):
        if cut is None:
            continue
        # Never present a cut-off stream as whole: it is set aside under a name that says so,
        # and the run says where it stops being complete.
        path = prepared.directory / name
        kept = set_aside_partial(path)
        late_errors.append(
            f"{name} is incomplete ({f'kept as {kept.name}' if kept else 'removed'}): writing it "
            f"failed ({cut}); what came after that point was not recorded"
        )
        full = disk_full(cut, path)
        if full is not None:
            facts.disk_full.append(full)
    for failure in endpoint.failures():
        details = dict(failure)
        obs.protocol_error(str(details.pop("reason", None) or "model-endpoint"), **details)
    for problem in immutable_changes(prepared):
        obs.protocol_error("immutable-resource-changed", message=problem)
    # What the subject wrote is kept as evidence (its workspace, the host's own session files):
    # without its secrets.
    for what, tree in (("workspace", prepared.workspace), ("session", prepared.session_dir)):
        try:
            if tree is not None:
                redact_tree(redactor, tree, prepared.directory, tally)
        except OSError as failure:
            late_errors.append(f"could not redact the {what} after the run: {failure}")
    effects: dict[str, Any] | None = None
    if group.type == "body":
        try:
            after = fingerprint(prepared.workspace, escaping="record")
            effects = {
                "before": fingerprint_json(prepared.before),
                "after": fingerprint_json(after),
                "changes": changes(prepared.before, after).to_json(),
            }
        except (ResourceError, OSError) as failure:
            late_errors.append(f"could not fingerprint the workspace after the run: {failure}")
    model_requests = _write_model_requests(endpoint, prepared.directory, late_errors, facts)
    events = "events.jsonl" if (prepared.directory / "events.jsonl").is_file() else None
    stderr = "stderr.log" if (prepared.directory / "stderr.log").is_file() else None
    context_artifact = None
    if needs_observer(group) and (facts.host.observes_context or endpoint.requests):
        if facts.host.observes_context:
            copy_observer_records(facts.home.root / CONTEXT, prepared.directory, redactor, tally)
        elif endpoint.requests is not None:  # from the requests the loopback server saw
            found = endpoint.requests()
            write_request_observations(found, facts.turn_ends, prepared.directory, redactor, tally)
        context_artifact, observer_problem = context_artifact_of(prepared.directory)
        if observer_problem:
            late_errors.append(observer_problem)
    turns = obs.observed_turns()
    target = str(prepared.target_path) if prepared.target_path else None
    turn_records = []
    all_reads: dict[str, None] = {}
    read_turns = []
    for turn in turns:
        reads = canonical_reads(turn.reads, prepared.workspace)
        all_reads.update(dict.fromkeys(reads))
        target_read = target is not None and target in reads
        if target_read:
            read_turns.append(turn.turn)
        turn_records.append(
            {
                "turn": turn.turn,
                "prompt": turn.prompt,
                "deliveredPrompt": turn.delivered_prompt,
                "response": turn.response,
                "transcript": {
                    "file": "transcript.json",
                    "start": turn.transcript_start,
                    "end": turn.transcript_end,
                },
                "successfulReadPaths": reads,
                "targetRead": target_read,
                "toolActivity": turn.tool_activity,
                "promptAccepted": turn.prompt_accepted,
                "usage": turn.usage,
                "assistantError": turn.assistant_error,
                "settled": turn.settled,
                "wallTimeMs": turn.wall_time_ms,
                "workspace": turn.workspace,
            }
        )
    settled = obs.settled(len(group.turns))
    assistant_error = obs.assistant_error()
    state = run_state(outcome, settled, assistant_error, obs, late_errors)
    response = turns[-1].response if turns else ""
    error: dict[str, str] | None = None
    if late_errors:
        error = {"kind": "infrastructure", "message": "; ".join(late_errors)}
    elif state != "complete":
        error = why_incomplete(
            state,
            outcome,
            settled,
            assistant_error,
            obs,
            prepared.directory,
            facts.host.display_name,
        )
    hint = None
    refusal = (
        "" if state == "complete" else credential_refusal(assistant_error, obs, prepared.directory)
    )
    if refusal and endpoint.mode == "live":
        model = group.model.model if group.model else None
        declare = how_to_declare(group.effective_runtime.host, provider_of(model))
        hint = f"the subject's model call failed ({refusal}); no credentials reached it: {declare}"
        if error is not None:
            advice = f"no credentials reached the subject: {declare}"
            error = {**error, "message": f"{error['message']}; {advice}"}
    runtime = group.effective_runtime
    usage = sum_usage([t.usage for t in turns])
    run = {
        "schema_version": 1,
        "variant": prepared.variant,
        "state": state,
        "evaluationType": group.type,
        "startedAt": max(facts.started, facts.launch.gate.opened_at or ""),
        "completedAt": utc_now(),
        "prompt": group.input.prompt,
        "prompts": list(group.turns),
        "workspace": str(prepared.workspace),
        "tools": list(group.tools),
        "commands": [c.model_dump(by_alias=True, exclude_none=True) for c in group.commands or []],
        "model": {
            "declared": group.model.model_dump(exclude_none=True) if group.model else None,
            "observed": obs.model,
        },
        "provider": {
            "mode": endpoint.mode,
            "cassette": endpoint.cassette,
            "sha256": endpoint.cassette_sha256,
        },
        facts.host.record_key: host_record(facts.host, facts.binary),
        "systemLayers": facts.layers,
        "environment": {
            "names": sorted(env),
            "literal": dict(runtime.environment.literal),
            "inherit": list(runtime.environment.inherit),
        },
        "turns": turn_records,
        "successfulReadPaths": list(all_reads),
        "unobservableTools": dict(getattr(facts.host, "unobservable_tools", {})),
        "activation": {
            "targetRead": bool(read_turns),
            "firstReadTurn": read_turns[0] if read_turns else None,
            "readTurns": read_turns,
            "successfulReadPaths": list(all_reads),
        },
        "response": response,
        "usage": usage,
        # What the loopback endpoint received, else the replies a host reported one by one.
        "modelCalls": endpoint.received() if endpoint.received else _replies(turns),
        "spend": spend_record(endpoint, usage),
        "effects": effects,
        "contextObservationArtifact": context_artifact,
        "process": {
            "command": argv[0],
            "host": runtime.host,
            "args": argv[1:],
            "exitCode": outcome.exit_code,
            "signal": outcome.signal,
            "settled": settled,
            "assistantError": assistant_error,
            "terminationReason": outcome.termination_reason,
            "parseErrors": obs.parse_errors,
            "protocolErrors": obs.protocol_errors,
            "descendantsKilled": outcome.descendants_killed,
            "stderr": stderr,
            "startupWaitMs": round(process.queued_s * 1000),
            **facts.launch.gate.timing(),
        },
        "artifacts": {
            "events": events,
            "final": "final.md",
            "stderr": stderr,
            "context": CONTEXT if needs_observer(group) else None,
            "transcript": "transcript.json",
            "modelRequests": model_requests,
        },
        "error": error,
        "hint": hint,
    }
    if group.type == "body":
        run["delivery"] = obs.delivery
    # Observations come from redacted records already; this is the net for everything else.
    run, _ = redactor.redact_value(run)
    transcript, _ = redactor.redact_value(obs.transcript)
    response, _ = redactor.redact_text(response)
    if redactor:
        for name, content in (
            (layout.TRANSCRIPT, json_bytes(transcript)),
            (layout.FINAL, (response + "\n").encode("utf-8")),
            (layout.RUN, json_bytes(run)),
        ):
            tally.add(name, markers(redactor, content))
        run["redactions"] = tally.record()
    return SubjectResult(run, transcript, response, next(iter(facts.disk_full), None))


def _write_model_requests(
    endpoint: Endpoint, variant_dir: Path, late_errors: list[str], facts: _Facts
) -> str | None:
    """Persist what the scripted model received; the API key is a header, never in a body."""
    if endpoint.requests is None:
        return None
    requests, counts = facts.launch.redactor.redact_value(endpoint.requests())
    facts.tally.add(MODEL_REQUESTS, counts)
    lines = [json.dumps(request, ensure_ascii=False) + "\n" for request in requests]
    try:
        write_once(variant_dir / MODEL_REQUESTS, "".join(lines).encode("utf-8"))
    except EvidenceError as failure:
        late_errors.append(str(failure))
        if isinstance(failure, DiskFullError):
            facts.disk_full.append(failure)
        return None
    return MODEL_REQUESTS


def _replies(turns: list[Turn]) -> int | None:
    """Model calls as the assistant replies a host reported (None: it reports none singly)."""
    return sum(turn.model_calls for turn in turns) or None
