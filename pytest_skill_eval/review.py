"""The advisory review (reference §9): two anonymous runs judged by a model, run like a subject.

A review never touches canonical evidence. It writes `groups/<id>/review/` and
`groups/<id>/semantic-grade.json`, the only artifacts that may be replaced, and it keeps the
previous review until the new one is complete (PRODUCT §8).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import SkillEvalError
from .evidence import json_bytes, utc_now
from .hosts.observation import Observation
from .hosts.pi.binary import PiBinary, base_environment, pi_argv
from .hosts.pi.driver import Conversation, run_one_shot
from .hosts.process import NO_PROGRESS_S, CancelToken, PiProcess, ProcessOutcome
from .modelserver.pi_config import (
    ModelSpecError,
    pi_agent_files,
    settings_json,
    split_model,
)
from .modelserver.script import Script, ScriptError, load_script, script_path
from .modelserver.server import Route, ScriptedModelServer
from .views.text import (
    VARIANTS,
    GroupEvidence,
    ViewError,
    declared_turns,
    is_aggregate,
    load_group,
    load_summary,
    mapping,
    read_json_file,
    select_groups,
)

REVIEW_DIR = "review"
SEMANTIC_GRADE = "semantic-grade.json"
# The only names below a group directory that are not canonical evidence (`skill-eval verify`).
ADVISORY_NAMES = frozenset({REVIEW_DIR, SEMANTIC_GRADE})
VERDICTS = ("yes", "no", "unclear")
LABELS = ("A", "B")
RESPONSE_LIMIT = 8000
ARGUMENT_LIMIT = 300
THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh")
# Scripted review traffic is priced like subjects' scripted traffic (USD per million tokens).
SCRIPTED_PRICES = {"input": 3.0, "output": 15.0, "cacheRead": 0.3, "cacheWrite": 3.75}
_STALE = re.compile(r"^(review\.(new|old)-[0-9a-f]+|\.semantic-grade\.json\.[0-9a-f]+\.tmp)$")
_FENCE_OPEN = re.compile(r"\A```(?:json)?\s*", re.IGNORECASE)
_FENCE_CLOSE = re.compile(r"\s*```\Z")


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
    usage: dict[str, Any] | None = None
    errors: list[str] = field(default_factory=list)


def label_bit() -> int:
    """One cryptographically random bit: 0 shows baseline as A, 1 shows candidate as A."""
    return secrets.randbits(1)


def assign_labels(bit: int) -> dict[str, str]:
    """The label → variant mapping for a random bit."""
    first, second = VARIANTS if bit == 0 else tuple(reversed(VARIANTS))
    return {"A": first, "B": second}


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
# The prompt


def utf16_length(text: str) -> int:
    """Length in UTF-16 code units, as JavaScript counts it."""
    return len(text) + sum(1 for char in text if ord(char) > 0xFFFF)


def truncate(text: str, limit: int) -> str:
    """At most `limit` UTF-16 units, never splitting a character, with a note of what was cut."""
    total = utf16_length(text)
    if total <= limit:
        return text
    kept, used = [], 0
    for char in text:
        width = 2 if ord(char) > 0xFFFF else 1
        if used + width > limit:
            break
        kept.append(char)
        used += width
    return "".join(kept) + f"… [truncated {total - used} characters]"


def path_scrubber(group: GroupEvidence) -> Callable[[str], str]:
    """Replace each run's own directory in text by `{{workspace}}`/`{{run}}`: paths there name
    the variant, which the reviewer must not learn."""
    prefixes: dict[str, str] = {}
    for variant in VARIANTS:
        directories = {str(group.directory / variant)}
        with contextlib.suppress(OSError):
            directories.add(os.path.realpath(group.directory / variant))
        workspace = (group.runs.get(variant) or {}).get("workspace")
        if isinstance(workspace, str) and workspace:
            directories.add(str(Path(workspace).parent))
        for directory in directories:
            prefixes[f"{directory}/workspace"] = "{{workspace}}"
            prefixes[directory] = "{{run}}"
    ordered = sorted(prefixes, key=len, reverse=True)
    pattern = re.compile("|".join(re.escape(p) for p in ordered)) if ordered else None

    def scrub(text: str) -> str:
        return pattern.sub(lambda m: prefixes[m.group(0)], text) if pattern else text

    return scrub


def _scrub_value(value: Any, scrub: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, list):
        return [_scrub_value(v, scrub) for v in value]
    if isinstance(value, dict):
        return {str(k): _scrub_value(v, scrub) for k, v in value.items()}
    return value


def _tool_status(call: Mapping[str, Any]) -> str:
    if not call.get("completed"):
        return "incomplete"
    return "failed" if call.get("isError") else "succeeded"


def run_evidence(run: Mapping[str, Any], scrub: Callable[[str], str]) -> list[str]:
    """The lines shown for one run: responses, tool calls, changed files. Nothing else."""
    turns = [t for t in run.get("turns") or [] if isinstance(t, Mapping)]
    if not turns:
        turns = [
            {"turn": 1, "response": run.get("response"), "toolActivity": run.get("toolActivity")}
        ]
    lines: list[str] = []
    for position, turn in enumerate(turns, start=1):
        number = turn.get("turn") if isinstance(turn.get("turn"), int) else position
        lines.append(f"Turn {number} response:")
        lines.append(truncate(scrub(str(turn.get("response") or "")), RESPONSE_LIMIT))
        for call in turn.get("toolActivity") or []:
            if not isinstance(call, Mapping):
                continue
            args = json.dumps(
                _scrub_value(call.get("args"), scrub), ensure_ascii=False, separators=(",", ":")
            )
            lines.append(
                f"- tool {scrub(str(call.get('toolName')))} {_tool_status(call)}: "
                f"{truncate(args, ARGUMENT_LIMIT)}"
            )
    changes = mapping(run.get("effects")).get("changes")
    if isinstance(changes, Mapping):
        for key in ("created", "modified", "deleted"):
            paths = [scrub(str(p)) for p in changes.get(key) or []]
            lines.append(f"Files {key}: {', '.join(paths) or 'none'}")
    return lines


def compose_prompt(group: GroupEvidence, labels: Mapping[str, str]) -> str:
    """The reviewer prompt (reference §9.3): task, questions, and runs A and B, anonymous."""
    first_run = group.runs.get("baseline") or group.runs.get("candidate")
    turns = declared_turns(group.definition, first_run)
    questions = [str(q) for q in group.definition.get("review_questions") or []]
    scrub = path_scrubber(group)
    lines = [
        "You are reviewing two anonymous runs, A and B, of the same task.",
        "Judge only the evidence below, and answer every question for both runs with "
        "yes, no or unclear.",
        "",
        "Task turns:",
        *(f"{number}. {text}" for number, text in enumerate(turns, start=1)),
        "",
        "Questions:",
        *(f"{number}. {text}" for number, text in enumerate(questions, start=1)),
    ]
    for label in LABELS:
        lines += ["", f"## Run {label}", *run_evidence(group.runs[labels[label]] or {}, scrub)]
    lines += [
        "",
        "Reply with only JSON of the form "
        '{"answers":[{"question":1,"A":"yes|no|unclear","B":"yes|no|unclear",'
        '"rationale":"one sentence"}]}',
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# The reply


def strip_fences(text: str) -> str:
    """Trim, then strip one leading ``` or ```json fence and one trailing fence."""
    text = _FENCE_OPEN.sub("", text.strip(), count=1)
    return _FENCE_CLOSE.sub("", text, count=1).strip()


def parse_reply(text: str, count: int) -> tuple[list[dict[str, Any]], list[str]]:
    """The answers by question number (`{question, A, B, rationale}`), or the errors."""
    try:
        data = json.loads(strip_fences(text))
    except ValueError:
        return [], ["reviewer response is not JSON"]
    answers = data.get("answers") if isinstance(data, dict) else None
    if not isinstance(answers, list) or len(answers) != count:
        return [], [f"reviewer must answer exactly {count} question(s)"]
    found: list[dict[str, Any]] = []
    errors: list[str] = []
    for number in range(1, count + 1):
        entry = next(
            (
                a
                for a in answers
                if isinstance(a, dict)
                and not isinstance(a.get("question"), bool)
                and a.get("question") == number
            ),
            None,
        )
        if (
            entry is None
            or entry.get("A") not in VERDICTS
            or entry.get("B") not in VERDICTS
            or not isinstance(entry.get("rationale"), str)
        ):
            errors.append(f"reviewer answer for question {number} is missing or invalid")
            continue
        found.append(entry)
    return ([], errors) if errors else (found, [])


def map_answers(
    answers: Sequence[Mapping[str, Any]], questions: Sequence[str], labels: Mapping[str, str]
) -> list[dict[str, Any]]:
    """Labelled answers turned back into `{question, baseline, candidate, rationale}`."""
    mapped = []
    for number, answer in enumerate(answers, start=1):
        by_variant = {labels[label]: answer[label] for label in LABELS}
        mapped.append(
            {
                "question": questions[number - 1],
                "baseline": by_variant["baseline"],
                "candidate": by_variant["candidate"],
                "rationale": answer["rationale"],
            }
        )
    return mapped


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
    """Run Pi once in `--mode json` with a fresh, deleted-afterwards HOME and agent dir."""
    result = _ReviewerRun()
    provider, model_id = check_model(settings.model)
    scratch = Path(tempfile.mkdtemp(prefix="skill-eval-review-"))
    try:
        home, agent, tmp, work = (scratch / n for n in ("home", "agent", "tmp", "work"))
        for directory in (home, agent, tmp, work):
            directory.mkdir()
        env = base_environment(home, agent, tmp)
        env["PWD"] = str(work)
        if route is not None:
            files = {
                "settings.json": settings_json(provider, model_id),
                "models.json": pi_agent_files(
                    route, provider=provider, model_id=model_id, cost=SCRIPTED_PRICES
                ),
            }
        else:
            live = settings_json()
            for key in ("defaultProvider", "defaultModel"):
                live.pop(key)
            files = {"settings.json": live}
            for name in settings.inherit:
                # Credentials reach the reviewer's environment only; nothing records values.
                env[name] = os.environ[name]
        for name, content in files.items():
            (agent / name).write_text(json.dumps(content, indent=2), encoding="utf-8")
        model = {"model": settings.model}
        if settings.thinking:
            model["thinking"] = settings.thinking
        argv = pi_argv(
            settings.pi.path,
            mode="json",
            session_dir=None,
            extensions=[],
            tools=[],
            skills=[],
            model=model,
            prompt=prompt,
        )
        process = PiProcess(
            argv=argv,
            env=env,
            cwd=work,
            events_path=staging / "events.jsonl",
            stderr_path=staging / "stderr.log",
            interactive=False,
            no_progress_s=settings.no_progress_s,
        )
        try:
            process.start()
        except OSError as error:
            (staging / "events.jsonl").touch()
            result.errors.append(f"reviewer did not start: {error}")
            return result
        conversation = Conversation(process, CancelToken())
        try:
            obs, outcome = run_one_shot(conversation, prompt)
        except BaseException:
            # Pi runs in its own session, so Ctrl-C reaches only us: stop it before leaving.
            process.terminate(conversation.outcome, "cancelled")
            process.finish(conversation.outcome)
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
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# Publishing


def _prompt_sha(review_dir: Path) -> str | None:
    try:
        return hashlib.sha256((review_dir / "prompt.md").read_bytes()).hexdigest()
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
    tmp = group_dir / f".{SEMANTIC_GRADE}.{token}.tmp"
    current = group_dir / REVIEW_DIR
    old = group_dir / f"{REVIEW_DIR}.old-{token}"
    moved_old = moved_new = False
    try:
        with open(tmp, "xb") as handle:
            handle.write(grade)
            handle.flush()
            os.fsync(handle.fileno())
        if current.exists() or current.is_symlink():
            os.rename(current, old)
            moved_old = True
        os.rename(staging, current)
        moved_new = True
        os.replace(tmp, group_dir / SEMANTIC_GRADE)
    except BaseException:
        if moved_new:
            os.rename(current, staging)
        if moved_old:
            os.rename(old, current)
        raise
    finally:
        tmp.unlink(missing_ok=True)
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
            route = server.open_route(script, source=script.source)
        try:
            run = _run_reviewer(prompt, staging, settings, route)
        finally:
            if route is not None:
                route.close()
        (staging / "final.md").write_text(run.response + "\n", encoding="utf-8")
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
                "events": f"{REVIEW_DIR}/events.jsonl",
                "final": f"{REVIEW_DIR}/final.md",
                "stderr": f"{REVIEW_DIR}/stderr.log",
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
    data = read_json_file(aggregate_dir / "aggregate.json")
    found = []
    for trial in mapping(data).get("trials") or []:
        identity = str(mapping(trial).get("id"))
        if identity in ("", ".", "..", "None") or "/" in identity or "\\" in identity:
            raise ViewError(f"{aggregate_dir / 'aggregate.json'} names an unsafe trial id")
        found.append(aggregate_dir.parent / identity)
    missing = [str(d) for d in found if not (d / "summary.json").is_file()]
    if missing:
        raise ReviewError(
            "trials of this aggregate have no summary.json (moved, deleted or unfinished): "
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
