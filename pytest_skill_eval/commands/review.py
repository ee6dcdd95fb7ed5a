"""The advisory review (reference §9): two anonymous runs judged by a model, run like a subject.

A review never touches canonical evidence. It writes `groups/<id>/review/` and
`groups/<id>/semantic-grade.json`, the only artifacts that may be replaced, and it keeps the
previous review until the new one is complete (PRODUCT §8).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import secrets
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import SkillEvalError
from ..evidence import atomic_write, entry_digest, json_bytes, layout, locate, utc_now
from ..evidence.locate import resolve_result
from ..evidence.observed import Usage
from ..evidence.read import aggregate_trial_dirs, is_finished
from ..hosts import host_for
from ..hosts.base import Endpoint, Launch, ServedModel, Talk
from ..hosts.dialect import renderer
from ..hosts.launch import isolated_home, launch_process
from ..hosts.observation import Observation
from ..hosts.pi.binary import PiBinary, pi_executable
from ..hosts.pi.config import ModelSpecError, split_model
from ..hosts.process import NO_PROGRESS_S, CancelToken, ProcessOutcome
from ..modelserver.route import Route
from ..modelserver.script import Script, ScriptError
from ..modelserver.scriptparse import load_script
from ..modelserver.scriptpaths import script_path
from ..modelserver.server import ScriptedModelServer
from ..modelserver.wire import OPENAI
from ..run.providers import SCRIPTED_PRICES
from ..views.present import mapping
from ..views.text import (
    VARIANTS,
    GroupEvidence,
    ViewError,
    is_aggregate,
    load_group,
    load_summary,
    read_json_file,
    select_groups,
)
from .cli import result_argument
from .review_prompt import (
    assign_labels,
    compose_prompt,
    label_bit,
    map_answers,
    parse_reply,
)

# The reviewer always runs on Pi (`ReviewSettings.pi`), isolated exactly like a subject.
REVIEW_HOST = "pi"
REVIEW_DIR = layout.REVIEW
SEMANTIC_GRADE = layout.SEMANTIC_GRADE
ADVISORY_NAMES = layout.ADVISORY
THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh")
_STALE = re.compile(r"^(review\.(new|old)-[0-9a-f]+|\.semantic-grade\.json\.[0-9a-f]+\.tmp)$")


class ReviewError(SkillEvalError):
    """A review cannot start as asked: bad model, missing script, unusable target."""


@dataclass(frozen=True, slots=True)
class ReviewSettings:
    """How to run the reviewer: Pi, model, thinking, scripts (or live), inherited names."""

    pi: PiBinary
    model: str
    thinking: str | None = None
    cassettes: Path | None = None
    inherit: tuple[str, ...] = ()
    no_progress_s: float = NO_PROGRESS_S


@dataclass(frozen=True, slots=True)
class ReviewOutcome:
    """What happened to one group: `complete`, `review-error` or `skipped` (with the reason)."""

    group_id: str
    state: str
    reason: str | None = None
    written: bool = False

    def line(self) -> str:
        """The CLI line: `Review <id>: <state>` plus the artifact or the skip reason."""
        text = f"Review {self.group_id}: {self.state}"
        if self.written:
            text += f" ({SEMANTIC_GRADE})"
        if self.reason:
            text += f" ({self.reason})"
        return text


@dataclass
class _ReviewerRun:
    """What the reviewer process produced."""

    response: str = ""
    usage: Usage | None = None
    errors: list[str] = field(default_factory=list)


def skip_reason(group: GroupEvidence) -> str | None:
    """Why a group cannot be reviewed (no questions, or a run that is not complete), else None."""
    if not [q for q in group.definition.get("review_questions") or [] if isinstance(q, str)]:
        return "no review questions"
    for variant in VARIANTS:
        run = group.runs.get(variant)
        state = run.get("state") if run is not None else "missing"
        if state != "complete":
            return f"{variant} run is {state}"
    return None


# ---------------------------------------------------------------------------------------------
# Running the reviewer


def check_model(model: str) -> tuple[str, str]:
    """`provider/model` split, or a ReviewError saying how to write it."""
    try:
        return split_model(model)
    except ModelSpecError as error:
        raise ReviewError(f"--model: {error}") from None


def _script_for(settings: ReviewSettings, group_id: str, trial: int) -> Script | None:
    if settings.cassettes is None:
        return None
    path = script_path(settings.cassettes, group_id, "review", trial)
    if path is None:
        raise ReviewError(
            f"no reviewer script for group {group_id!r}: expected "
            f"{settings.cassettes / group_id / 'review.yaml'} (write one, or review live "
            "without --cassettes)"
        )
    try:
        return load_script(path)
    except ScriptError as error:
        raise ReviewError(str(error)) from None


def _did_not_complete(obs: Observation, outcome: ProcessOutcome) -> str | None:
    turn = obs.turns[0] if obs.turns else None
    settled = bool(turn and turn.settled)
    error = turn.assistant_error if turn else None
    # A blank stdout line is not a record; anything else unparsable means the stream lied.
    parse_errors = [e for e in obs.parse_errors if e.get("reason") != "empty-record"]
    clean = not obs.protocol_errors and not parse_errors
    if outcome.exit_code == 0 and settled and error is None and clean:
        return None
    exit_text = outcome.exit_code if outcome.signal is None else outcome.signal
    message = (
        f"reviewer did not complete: exit={exit_text} settled={str(settled).lower()} "
        f"error={json.dumps(error, ensure_ascii=False)}"
    )
    if outcome.termination_reason:
        message += f" termination={outcome.termination_reason}"
    if obs.protocol_errors:
        message += f" protocol-errors={len(obs.protocol_errors)}"
    if parse_errors:
        message += f" parse-errors={len(parse_errors)}"
    return message


def _run_reviewer(
    prompt: str, staging: Path, settings: ReviewSettings, route: Route | None
) -> _ReviewerRun:
    """Run the reviewer once, one shot, in a fresh, deleted-afterwards isolated home."""
    result = _ReviewerRun()
    provider, model_id = check_model(settings.model)
    model = {"model": settings.model}
    if settings.thinking:
        model["thinking"] = settings.thinking
    served = None
    if route is not None:
        served = ServedModel(route, OPENAI, provider, model_id, SCRIPTED_PRICES)
    endpoint = Endpoint(mode="live" if route is None else "scripted", model=model, served=served)
    host = host_for(REVIEW_HOST)
    with isolated_home(host, endpoint, prefix="skill-eval-review-") as home:
        work = home.root / "work"
        work.mkdir()
        # Credentials reach a live reviewer's environment only; nothing records values.
        inherited = {} if route is not None else {n: os.environ[n] for n in settings.inherit}
        launch = Launch(
            cwd=work,
            prompts=(prompt,),
            one_shot=True,
            events_path=staging / layout.EVENTS,
            stderr_path=staging / layout.STDERR,
            model=model,
            environment=inherited,
            no_progress_s=settings.no_progress_s,
        )
        _argv, _env, process = launch_process(host, settings.pi, launch, home)
        try:
            process.start()
        except OSError as error:
            (staging / layout.EVENTS).touch()
            result.errors.append(f"reviewer did not start: {error}")
            return result
        dialogue = host.converse(Talk(process, CancelToken(), launch, lambda _turn: None))
        try:
            obs, outcome = dialogue.run()
        except BaseException:
            # The host runs in its own session, so Ctrl-C reaches only us: stop it first.
            dialogue.process.terminate(dialogue.outcome, "cancelled")
            dialogue.process.finish(dialogue.outcome)
            raise
    turn = obs.turns[0] if obs.turns else None
    result.response = turn.response if turn else ""
    result.usage = turn.usage if turn else None
    problem = _did_not_complete(obs, outcome)
    if problem:
        result.errors.append(problem)
    if route is not None:
        result.errors.extend(f"scripted reviewer: {f.message}" for f in route.failures)
    return result


# ---------------------------------------------------------------------------------------------
# Publishing


def _prompt_sha(review_dir: Path) -> str | None:
    try:
        return entry_digest(review_dir / "prompt.md")  # never opens a planted FIFO
    except OSError:
        return None


def recover(group_dir: Path) -> None:
    """Finish what a hard crash inside `publish` left: the review that matches
    `semantic-grade.json` is put back as `review/`, then every leftover is deleted."""
    current = group_dir / REVIEW_DIR
    olds = sorted(p for p in group_dir.glob(f"{REVIEW_DIR}.old-*") if p.is_dir())
    if olds:
        try:
            recorded = mapping(read_json_file(group_dir / SEMANTIC_GRADE)).get("prompt")
        except ViewError:
            recorded = None
        wanted = mapping(recorded).get("sha256")
        if not current.exists() or (
            _prompt_sha(current) != wanted and _prompt_sha(olds[0]) == wanted
        ):
            shutil.rmtree(current, ignore_errors=True)
            os.rename(olds[0], current)
    for entry in group_dir.iterdir():
        if _STALE.match(entry.name):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)


def publish(group_dir: Path, staging: Path, grade: bytes) -> None:
    """Swap the staged review in: old `review/` aside, new one in, grade replaced, old deleted.

    Any failure puts the previous review back, so a reader sees either review, never a mix.
    """
    token = secrets.token_hex(4)
    current = group_dir / REVIEW_DIR
    old = group_dir / f"{REVIEW_DIR}.old-{token}"
    moved_old = moved_new = False
    try:
        if current.exists() or current.is_symlink():
            os.rename(current, old)
            moved_old = True
        os.rename(staging, current)
        moved_new = True
        atomic_write(group_dir / SEMANTIC_GRADE, grade)
    except BaseException:
        if moved_new:
            os.rename(current, staging)
        if moved_old:
            os.rename(old, current)
        raise
    if moved_old:
        shutil.rmtree(old, ignore_errors=True)


def review_group(
    group: GroupEvidence,
    settings: ReviewSettings,
    server: ScriptedModelServer | None,
    *,
    trial: int = 1,
    bit: int | None = None,
) -> ReviewOutcome:
    """Review one group (or skip it); never touches canonical evidence."""
    reason = skip_reason(group)
    if reason:
        return ReviewOutcome(group.id, "skipped", reason)
    script = _script_for(settings, group.id, trial)
    labels = assign_labels(label_bit() if bit is None else bit)
    questions = [str(q) for q in group.definition.get("review_questions") or []]
    prompt = compose_prompt(group, labels)
    group_dir = group.directory
    recover(group_dir)
    staging = group_dir / f"{REVIEW_DIR}.new-{secrets.token_hex(4)}"
    staging.mkdir()
    try:
        prompt_bytes = prompt.encode("utf-8")
        (staging / "prompt.md").write_bytes(prompt_bytes)
        route = None
        if script is not None:
            assert server is not None
            route = server.open_route(script, source=script.source, render=renderer(REVIEW_HOST))
        try:
            run = _run_reviewer(prompt, staging, settings, route)
        finally:
            if route is not None:
                route.close()
        (staging / layout.FINAL).write_text(run.response + "\n", encoding="utf-8")
        errors = list(run.errors)
        answers: list[dict[str, Any]] = []
        if not errors:
            parsed, errors = parse_reply(run.response, len(questions))
            answers = map_answers(parsed, questions, labels)
        grade: dict[str, Any] = {
            "schema_version": 1,
            "kind": "advisory-review",
            "advisory": True,
            "state": "review-error" if errors else "complete",
            "model": settings.model,
            "thinking": settings.thinking,
            "labels": labels,
            "prompt": {
                "file": f"{REVIEW_DIR}/prompt.md",
                "sha256": hashlib.sha256(prompt_bytes).hexdigest(),
            },
            "answers": answers,
            "errors": errors,
            "usage": run.usage,
            "provider": _provider_record(script),
            "pi": {"version": settings.pi.version},
            "artifacts": {
                "events": f"{REVIEW_DIR}/{layout.EVENTS}",
                "final": f"{REVIEW_DIR}/{layout.FINAL}",
                "stderr": f"{REVIEW_DIR}/{layout.STDERR}",
            },
            "completedAt": utc_now(),
        }
        publish(group_dir, staging, json_bytes(grade))
    finally:
        # Published staging was renamed away; anything left is an unfinished review.
        shutil.rmtree(staging, ignore_errors=True)
    return ReviewOutcome(group.id, grade["state"], written=True)


def _provider_record(script: Script | None) -> dict[str, Any]:
    if script is None:
        return {"mode": "live"}
    recorded = any(i.request is not None for i in script.interactions)
    return {
        "mode": "replay" if recorded else "scripted",
        "cassette": str(script.source),
        "sha256": script.sha256,
    }


# ---------------------------------------------------------------------------------------------
# Results and aggregates


def check_inherit(names: Sequence[str]) -> None:
    """Every `--inherit` name must be set; say which is missing."""
    for name in names:
        if name not in os.environ:
            raise ReviewError(
                f"--inherit {name}: {name} is not set in this environment; export it first"
            )


def _trial_number(summary: Mapping[str, Any]) -> int:
    trial = summary.get("trial")
    return trial if isinstance(trial, int) and not isinstance(trial, bool) and trial > 0 else 1


@dataclass(frozen=True, slots=True)
class _Planned:
    """One result to review: its directory, trial number and selected groups."""

    directory: Path
    trial: int
    groups: list[GroupEvidence]


def _plan(result_dir: Path, group: str | None) -> _Planned:
    summary = load_summary(result_dir)
    records = select_groups(summary, group)
    return _Planned(
        result_dir, _trial_number(summary), [load_group(result_dir, r) for r in records]
    )


def trial_dirs(aggregate_dir: Path) -> list[Path]:
    """The result directories of an aggregate's trials (siblings in the same runs directory)."""
    found = aggregate_trial_dirs(aggregate_dir)
    missing = [str(d) for d in found if not is_finished(d)]
    if missing:
        raise ReviewError(
            f"trials of this aggregate have no {layout.SUMMARY} (moved, deleted or unfinished): "
            + ", ".join(missing)
        )
    return found


def review_target(
    target: Path,
    settings: ReviewSettings,
    *,
    group: str | None = None,
    emit: Callable[[str], None] = print,
) -> list[ReviewOutcome]:
    """Review a result, or each trial listed in an aggregate (siblings in the same runs dir)."""
    check_model(settings.model)
    if settings.cassettes is None:
        check_inherit(settings.inherit)
    elif not settings.cassettes.is_dir():
        raise ReviewError(f"--cassettes {settings.cassettes}: no such directory")
    aggregate = is_aggregate(target)
    plans = [_plan(d, group) for d in (trial_dirs(target) if aggregate else [target])]
    # Every needed script is checked before any reviewer runs, so nothing half-happens.
    for plan in plans:
        for evidence in plan.groups:
            if skip_reason(evidence) is None:
                _script_for(settings, evidence.id, plan.trial)
    server = ScriptedModelServer() if settings.cassettes is not None else None
    outcomes: list[ReviewOutcome] = []
    try:
        if server is not None:
            server.start()
        for plan in plans:
            if aggregate:
                emit(f"Trial {plan.directory.name}")
            for evidence in plan.groups:
                outcome = review_group(evidence, settings, server, trial=plan.trial)
                emit(outcome.line())
                outcomes.append(outcome)
    finally:
        if server is not None:
            server.stop()
    return outcomes


def arguments(command: str, parser: argparse.ArgumentParser) -> None:
    """Declare `skill-eval review` on its `parser`."""
    result_argument(parser)
    parser.add_argument("--model", required=True, help="reviewer model as provider/model")
    parser.add_argument("--thinking", choices=THINKING_LEVELS, help="reviewer thinking level")
    parser.add_argument(
        "--group", help="one group, by id or one-based position; ID@HOST for one host"
    )
    parser.add_argument(
        "--cassettes",
        metavar="DIR",
        help="answer from the scripted reviewer DIR/<group-id>/review.yaml on loopback "
        "(no network); without it the reviewer is live",
    )
    parser.add_argument(
        "--inherit",
        action="append",
        default=[],
        metavar="NAME",
        help="pass environment variable NAME (a credential) to a live reviewer; repeatable",
    )
    parser.add_argument(
        "--pi",
        help="the Pi binary (default: pi on PATH, else node_modules from the root up to the "
        "project's ini file, then beside this package)",
    )


def run(args: argparse.Namespace, root: Path) -> int:
    """Run `skill-eval review`; exit 1 when any group ended `review-error`."""
    result = resolve_result(args.result, root)
    settings = ReviewSettings(
        pi=pi_executable(args.pi, root, rootdir=locate.ini_folder(root)),
        model=args.model,
        thinking=args.thinking,
        cassettes=Path(args.cassettes).resolve() if args.cassettes else None,
        inherit=tuple(args.inherit),
    )
    outcomes = review_target(result, settings, group=args.group, emit=print)
    return 1 if any(o.state == "review-error" for o in outcomes) else 0
