"""Run one variant's subject on its host: evidence, watchdog, cancellation, the run record.

Nothing here names a host: the isolated home, argv, environment baseline and event stream come
from the `Host` that `runtime.host` selects (`hosts.host_for`).
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

from ..definitions import WORKSPACE_KINDS, Group
from ..errors import HostError
from ..evidence import layout, utc_now
from ..evidence.redact import Tally
from ..modelserver.placeholders import fill_text
from ..workspace import (
    ResourceError,
    fingerprint_from_json,
    snapshot_workspace_turn,
)
from ..workspace.materialise import PreparedVariant
from . import host_for, prestart
from .base import (
    Endpoint,
    Executable,
    Home,
    Host,
    Launch,
    PromptGate,
    Talk,
)
from .launch import isolated_home, launch_process
from .layers import kept_out
from .observation import Observation, Turn
from .process import NO_PROGRESS_S, CancelToken, ProcessOutcome
from .redaction import redact_tree, subject_redactor
from .run_record import RunFacts, SubjectResult, needs_observer, record_run
from .workspace_layers import layer_state

__all__ = ["Endpoint", "SetupError", "SubjectResult", "run_subject"]

MODEL_REQUESTS = layout.MODEL_REQUESTS
CONTEXT = layout.CONTEXT_OBSERVATIONS


class SetupError(HostError):
    """The variant could not be set up (the run is `invalid`)."""


def needs_turn_snapshots(group: Group) -> bool:
    """Turn-scoped workspace expectations need an immutable workspace copy after each turn."""
    return any(e.kind in WORKSPACE_KINDS and e.turn is not None for e in group.expectations)


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
        env["SKILL_EVAL_COMMANDS"] = json.dumps(declared_commands(group, prepared))
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


def declared_commands(group: Group, prepared: PreparedVariant) -> list[dict[str, Any]]:
    """The group's commands as the subject runs them: `{{skill:N}}` in an argv is the path of
    the variant's N-th skill snapshot, as in a script; a variant without that skill keeps the
    placeholder as written (the command fails as it would without the skill)."""
    skills = {k: v for k, v in prepared.placeholders().items() if k.startswith("skill:")}
    return [
        {
            **command.model_dump(by_alias=True, exclude_none=True),
            "argv": [fill_text(part, skills) for part in command.argv],
        }
        for command in group.commands or ()
    ]


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
        events_path=prepared.directory / layout.EVENTS,
        stderr_path=prepared.directory / layout.STDERR,
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
    gate: PromptGate | None = None,
) -> SubjectResult:
    """Run the host for one variant (a held `gate` holds its first prompt); never loses evidence."""
    started = utc_now()
    try:
        host = host_for(group.effective_runtime.host)
        # The isolated home may hold credentials: it never becomes evidence.
        prefix = f"skill-eval-{host.registration.name}-"
        with isolated_home(host, endpoint, prefix=prefix, workspace=prepared.workspace) as home:
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
    layers = kept_out(host.registration.display_name, host.registration.system_layers)
    # What a later turn's process must find as the first one did (before anything ran).
    start = layer_state(launch.cwd, host.registration.workspace_layers)
    launch = dataclasses.replace(launch, layers_at_start=start)
    argv, env, process = launch_process(host, binary, launch, home)
    tally = Tally()
    facts = RunFacts(
        group, prepared, host, binary, endpoint, argv, env, started, launch, home, tally, layers
    )
    try:
        prestart.start_when_free(process, launch.gate, endpoint.received, cancel)
    except OSError as failure:
        # The host could not be spawned (binary gone, bad interpreter): still a run on record.
        unstarted = Observation()
        unstarted.protocol_error(
            "process-error", message=f"could not start {host.registration.display_name}: {failure}"
        )
        outcome = ProcessOutcome(termination_reason="process-error")
        return record_run(facts, unstarted, outcome, process)
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

    dialogue = host.converse(Talk(process, cancel, launch, after_turn))
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
    return record_run(facts, obs, outcome, dialogue.process)
