"""The run record of one subject (`run.json`), built once the host is done.

Each post-run step that fails is recorded beside the evidence, never instead of it: a stream cut
by a write error, a tree that could not be redacted or fingerprinted, a model-requests file the
disk had no room for. The record is a `RunRecord` (`evidence/records.py`), redacted as a whole
before it is returned.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..definitions import Group
from ..errors import DiskFullError
from ..evidence import EvidenceError, json_bytes, layout, utc_now, write_once
from ..evidence.observed import ContextArtifact, Effects, Process, TranscriptSpan
from ..evidence.observed import Turn as TurnRecord
from ..evidence.records import RunArtifacts, RunError, RunRecord, SystemLayerRecord
from ..evidence.redact import Tally
from ..evidence.skill_records import Activation, OfferedSkillsRecord
from ..evidence.store import disk_full
from ..workspace import ResourceError, changes, fingerprint, fingerprint_json
from ..workspace.materialise import PreparedVariant, immutable_changes
from .activation import activation_facts, offered_skills, target_index
from .base import Endpoint, Executable, Home, Host, Launch
from .context_records import context_artifact_of, copy_observer_records, write_request_observations
from .credentials import how_to_declare, provider_of
from .failures import credential_refusal, run_state, why_incomplete
from .launch import host_record, simulated_usage, spend_record
from .observation import Observation, Turn, canonical_reads, sum_usage
from .process import HostProcess, ProcessOutcome, set_aside_partial
from .redaction import markers, redact_tree
from .skill_warnings import keep_skill_warnings

MODEL_REQUESTS = layout.MODEL_REQUESTS
CONTEXT = layout.CONTEXT_OBSERVATIONS


@dataclass
class SubjectResult:
    """The run record (run.json without the transcript) and the artifacts beside it."""

    run: RunRecord  # carried on as the group's record
    transcript: list[dict[str, object]]  # the host's messages, redacted
    response: str
    # The results disk filled while the run was recorded: what could be written is, and the
    # invocation stops once the run record is on disk.
    disk_full: DiskFullError | None = None


@dataclass(frozen=True)
class RunFacts:
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


def needs_observer(group: Group) -> bool:
    """Only groups with context-text expectations load the context observer."""
    return any(e.kind == "context-text" for e in group.expectations)


def record_run(
    facts: RunFacts, obs: Observation, outcome: ProcessOutcome, process: HostProcess
) -> SubjectResult:
    """The run's record and artifacts, redacted; what failed after the run is in its error."""
    late_errors = _settle_streams(facts, process)
    for failure in facts.endpoint.failures():
        details = dict(failure)
        obs.protocol_error(str(details.pop("reason", None) or "model-endpoint"), **details)
    for problem in immutable_changes(facts.prepared):
        obs.protocol_error("immutable-resource-changed", message=problem)
    _redact_trees(facts, late_errors)
    late_errors += keep_skill_warnings(
        facts.home.root, facts.host.registration.name, facts.prepared.skills,
        facts.prepared.directory, facts.launch.redactor, facts.tally,
    )  # fmt: skip
    written = _Written(
        effects=_effects(facts, late_errors),
        model_requests=_write_model_requests(facts, late_errors),
        offered=_write_offered(facts, late_errors),
        context=_context_artifact(facts, late_errors),
        startup_wait_ms=round(process.queued_s * 1000),
    )
    run = _run_record(facts, obs, outcome, written, late_errors)
    return _redacted(facts, run, obs)


@dataclass(frozen=True)
class _Written:
    """What the steps after the run made, for the record."""

    effects: Effects | None
    model_requests: str | None
    offered: tuple[OfferedSkillsRecord, str | None]  # the record, and its file when written
    context: ContextArtifact | None
    startup_wait_ms: int


def _settle_streams(facts: RunFacts, process: HostProcess) -> list[str]:
    """Count the streams' redactions; set aside a stream a write error cut, saying where."""
    late_errors: list[str] = []
    for name, counts in process.redactions.items():
        facts.tally.add(name, counts)
    for name, cut in ((layout.EVENTS, process.events_error), (layout.STDERR, process.stderr_error)):
        if cut is None:
            continue
        # Never present a cut-off stream as whole: it is set aside under a name that says so,
        # and the run says where it stops being complete.
        path = facts.prepared.directory / name
        kept = set_aside_partial(path)
        late_errors.append(
            f"{name} is incomplete ({f'kept as {kept.name}' if kept else 'removed'}): writing it "
            f"failed ({cut}); what came after that point was not recorded"
        )
        full = disk_full(cut, path)
        if full is not None:
            facts.disk_full.append(full)
    return late_errors


def _redact_trees(facts: RunFacts, late_errors: list[str]) -> None:
    """What the subject wrote is kept as evidence (its workspace, the host's own session
    files): without its secrets."""
    prepared = facts.prepared
    for what, tree in (("workspace", prepared.workspace), ("session", prepared.session_dir)):
        try:
            if tree is not None:
                redact_tree(facts.launch.redactor, tree, prepared.directory, facts.tally)
        except OSError as failure:
            late_errors.append(f"could not redact the {what} after the run: {failure}")


def _effects(facts: RunFacts, late_errors: list[str]) -> Effects | None:
    """A body group's workspace before and after the run, and what changed between them."""
    prepared = facts.prepared
    if facts.group.type != "body":
        return None
    try:
        after = fingerprint(prepared.workspace, escaping="record")
    except (ResourceError, OSError) as failure:
        late_errors.append(f"could not fingerprint the workspace after the run: {failure}")
        return None
    return {
        "before": fingerprint_json(prepared.before),
        "after": fingerprint_json(after),
        "changes": changes(prepared.before, after).to_json(),
    }


def _write_model_requests(facts: RunFacts, late_errors: list[str]) -> str | None:
    """Persist what the scripted model received; the API key is a header, never in a body."""
    endpoint = facts.endpoint
    if endpoint.requests is None:
        return None
    requests, counts = facts.launch.redactor.redact_value(endpoint.requests())
    facts.tally.add(MODEL_REQUESTS, counts)
    lines = [json.dumps(request, ensure_ascii=False) + "\n" for request in requests]
    return _write(facts, MODEL_REQUESTS, "".join(lines).encode("utf-8"), late_errors)


def _write_offered(
    facts: RunFacts, late_errors: list[str]
) -> tuple[OfferedSkillsRecord, str | None]:
    """What the host listed to the model, against each declared skill (`offered-skills.json`)."""
    requests = facts.endpoint.requests() if facts.endpoint.requests is not None else None
    record = offered_skills(facts.host.registration, facts.prepared, requests)
    redacted: OfferedSkillsRecord
    redacted, counts = facts.launch.redactor.redact_value(record)
    facts.tally.add(layout.OFFERED_SKILLS, counts)
    return redacted, _write(facts, layout.OFFERED_SKILLS, json_bytes(redacted), late_errors)


def _write(facts: RunFacts, name: str, data: bytes, late_errors: list[str]) -> str | None:
    """Write one evidence file of the variant once; its name, or None with the failure noted."""
    try:
        write_once(facts.prepared.directory / name, data)
    except EvidenceError as failure:
        late_errors.append(str(failure))
        if isinstance(failure, DiskFullError):
            facts.disk_full.append(failure)
        return None
    return name


def _context_artifact(facts: RunFacts, late_errors: list[str]) -> ContextArtifact | None:
    """What the model received, for `context-text`: from inside the host when it observes it,
    else from the requests the loopback server saw."""
    endpoint, directory = facts.endpoint, facts.prepared.directory
    observes = facts.host.registration.observes_context
    if not needs_observer(facts.group) or not (observes or endpoint.requests):
        return None
    redactor, tally = facts.launch.redactor, facts.tally
    if observes:
        copy_observer_records(facts.home.root / CONTEXT, directory, redactor, tally)
    elif endpoint.requests is not None:
        write_request_observations(endpoint.requests(), facts.turn_ends, directory, redactor, tally)
    artifact, problem = context_artifact_of(directory)
    if problem:
        late_errors.append(problem)
    return artifact


def _turn_records(
    turns: Sequence[Turn], prepared: PreparedVariant
) -> tuple[list[TurnRecord], Activation]:
    """Each turn's record, and whether (and in which turns) the target skill was read."""
    target = str(prepared.target_path) if prepared.target_path else None
    records: list[TurnRecord] = []
    all_reads: dict[str, None] = {}
    read_turns: list[int] = []
    for turn in turns:
        reads = canonical_reads(turn.reads, prepared.workspace)
        all_reads.update(dict.fromkeys(reads))
        target_read = target is not None and target in reads
        if target_read:
            read_turns.append(turn.turn)
        transcript: TranscriptSpan = {
            "file": layout.TRANSCRIPT,
            "start": turn.transcript_start,
            "end": turn.transcript_end,
        }
        records.append(
            {
                "turn": turn.turn,
                "prompt": turn.prompt,
                "deliveredPrompt": turn.delivered_prompt,
                "response": turn.response,
                "transcript": transcript,
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
    activation: Activation = {
        "targetRead": bool(read_turns),
        "firstReadTurn": read_turns[0] if read_turns else None,
        "readTurns": read_turns,
        "successfulReadPaths": list(all_reads),
    }
    return records, activation


def _outcome(
    facts: RunFacts, obs: Observation, outcome: ProcessOutcome, late_errors: list[str]
) -> tuple[str, RunError | dict[str, str] | None, str | None]:
    """The run's state, why it is not complete, and how to give a live subject credentials
    when a refusal says it had none."""
    group, directory = facts.group, facts.prepared.directory
    settled = obs.settled(len(group.turns))
    assistant_error = obs.assistant_error()
    state = run_state(outcome, settled, assistant_error, obs, late_errors)
    error: RunError | dict[str, str] | None = None
    if late_errors:
        error = {"kind": "infrastructure", "message": "; ".join(late_errors)}
    elif state != "complete":
        display = facts.host.registration.display_name
        error = why_incomplete(state, outcome, settled, assistant_error, obs, directory, display)
    refusal = "" if state == "complete" else credential_refusal(assistant_error, obs, directory)
    if not refusal or facts.endpoint.mode != "live":
        return state, error, None
    model = group.model.model if group.model else None
    declare = how_to_declare(group.effective_runtime.host, provider_of(model))
    hint = f"the subject's model call failed ({refusal}); no credentials reached it: {declare}"
    if error is not None:
        advice = f"no credentials reached the subject: {declare}"
        error = {"kind": error["kind"], "message": f"{error['message']}; {advice}"}
    return state, error, hint


def _process_record(
    facts: RunFacts, obs: Observation, outcome: ProcessOutcome, stderr: str | None, wait_ms: int
) -> Process:
    """How the host's process ran and ended."""
    return {
        "command": facts.argv[0],
        "host": facts.group.effective_runtime.host,
        "args": facts.argv[1:],
        "exitCode": outcome.exit_code,
        "signal": outcome.signal,
        "settled": obs.settled(len(facts.group.turns)),
        "assistantError": obs.assistant_error(),
        "terminationReason": outcome.termination_reason,
        "parseErrors": obs.parse_errors,
        "protocolErrors": obs.protocol_errors,
        "descendantsKilled": outcome.descendants_killed,
        "stderr": stderr,
        "startupWaitMs": wait_ms,
        **facts.launch.gate.timing(),
    }


def _run_record(
    facts: RunFacts,
    obs: Observation,
    outcome: ProcessOutcome,
    written: _Written,
    late_errors: list[str],
) -> RunRecord:
    """`run.json` from what was observed and what was written after the run."""
    group, prepared, endpoint = facts.group, facts.prepared, facts.endpoint
    directory = prepared.directory
    turns = obs.observed_turns()
    events = layout.EVENTS if (directory / layout.EVENTS).is_file() else None
    stderr = layout.STDERR if (directory / layout.STDERR).is_file() else None
    turn_records, activation = _turn_records(turns, prepared)
    offered, offered_file = written.offered
    activity = [call for turn in turns for call in turn.tool_activity]
    how = (endpoint.mode, facts.host.registration.display_name)
    skills = [snapshot.path for snapshot in prepared.skills]
    target = target_index(prepared)
    activation = activation_facts(activation, skills, target, offered, activity, how)
    state, error, hint = _outcome(facts, obs, outcome, late_errors)
    runtime = group.effective_runtime
    usage = simulated_usage(endpoint, sum_usage([t.usage for t in turns]))
    artifacts: RunArtifacts = {
        "events": events,
        "final": layout.FINAL,
        "stderr": stderr,
        "context": CONTEXT if needs_observer(group) else None,
        "transcript": layout.TRANSCRIPT,
        "modelRequests": written.model_requests,
        "offeredSkills": offered_file,
    }
    run: RunRecord = {
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
        "binary": host_record(facts.host, facts.binary),
        "systemLayers": facts.layers,
        "environment": {
            "names": sorted(facts.env),
            "literal": dict(runtime.environment.literal),
            "inherit": list(runtime.environment.inherit),
        },
        "turns": turn_records,
        "successfulReadPaths": activation["successfulReadPaths"],
        "unobservableTools": dict(facts.host.registration.unobservable),
        "activation": activation,
        "response": turns[-1].response if turns else "",
        "usage": usage,
        # What the loopback endpoint received, else the replies a host reported one by one.
        "modelCalls": endpoint.received() if endpoint.received else _replies(turns),
        "spend": spend_record(endpoint, usage),
        "effects": written.effects,
        "contextObservationArtifact": written.context,
        "process": _process_record(facts, obs, outcome, stderr, written.startup_wait_ms),
        "artifacts": artifacts,
        "error": error,
        "hint": hint,
    }
    if group.type == "body":
        run["delivery"] = obs.delivery
    return run


def _redacted(facts: RunFacts, run: RunRecord, obs: Observation) -> SubjectResult:
    """Observations come from redacted records already; this is the net for everything else."""
    redactor, tally = facts.launch.redactor, facts.tally
    redacted_run: RunRecord
    redacted_run, _ = redactor.redact_value(run)
    transcript, _ = redactor.redact_value(obs.transcript)
    response, _ = redactor.redact_text(run.get("response") or "")
    if redactor:
        for name, content in (
            (layout.TRANSCRIPT, json_bytes(transcript)),
            (layout.FINAL, (response + "\n").encode("utf-8")),
            (layout.RUN, json_bytes(redacted_run)),
        ):
            tally.add(name, markers(redactor, content))
        redacted_run["redactions"] = tally.record()
    full = next(iter(facts.disk_full), None)
    return SubjectResult(redacted_run.copy(), transcript, response, full)


def _replies(turns: Sequence[Turn]) -> int | None:
    """Model calls as the assistant replies a host reported (None: it reports none singly)."""
    return sum(turn.model_calls for turn in turns) or None
